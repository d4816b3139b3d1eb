import type { Knex } from 'knex';
import { wordsDigestOf } from '../../domain/term-vectors.ts';

/**
 * Embeddings stored with the rows they describe (docs/decisions/matching.md "Stored
 * embeddings"): a capability's or a demand's words are embedded once, after they are written, and
 * every match reads the stored vector. Each row gains the digest of its words; an embedding keeps
 * the digest of the words and the name of the model it was made with, so it is used only while
 * both still hold (new words or another model: embedded again). Vectors are float32 in bytea,
 * a quarter of their size as JSON and read without parsing. Existing rows get their digest here,
 * in batches, saying how far it got.
 */
const batchSize = 500;

async function fillDigests(knex: Knex, table: 'capabilities' | 'demands') {
  let filled = 0;
  for (;;) {
    const rows = (await knex(table).whereNull('words_sha').orderBy('id').limit(batchSize).select('id', 'title', 'description', 'tags')) as {
      id: string;
      title: string | null;
      description: string;
      tags: string[] | string;
    }[];
    if (rows.length === 0) break;
    for (const row of rows) {
      const tags = typeof row.tags === 'string' ? (JSON.parse(row.tags) as string[]) : row.tags;
      await knex(table)
        .where({ id: row.id })
        .update({ words_sha: wordsDigestOf({ title: row.title, description: row.description, tags }) });
    }
    filled += rows.length;
    process.stderr.write(`020_row_embeddings: ${filled} ${table} digested\n`);
  }
}

function embeddingsTable(knex: Knex, name: string, key: string, parent: string) {
  return knex.schema.createTable(name, (table) => {
    table.uuid(key).notNullable().references(`${parent}.id`).onDelete('CASCADE');
    table.text('model').notNullable();
    table.text('words_sha').notNullable();
    table.binary('vector').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.primary([key, 'model']);
  });
}

export async function up(knex: Knex): Promise<void> {
  for (const table of ['capabilities', 'demands'] as const) {
    await knex.schema.alterTable(table, (columns) => {
      columns.text('words_sha').nullable();
    });
    await fillDigests(knex, table);
  }
  await embeddingsTable(knex, 'capability_embeddings', 'capability_id', 'capabilities');
  await embeddingsTable(knex, 'demand_embeddings', 'demand_id', 'demands');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('capability_embeddings');
  await knex.schema.dropTableIfExists('demand_embeddings');
  for (const table of ['capabilities', 'demands'] as const) {
    await knex.schema.alterTable(table, (columns) => {
      columns.dropColumn('words_sha');
    });
  }
}
