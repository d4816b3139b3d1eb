import type { Knex } from 'knex';
import { storedVectorOf } from '../../domain/term-vectors.ts';

/**
 * Term vectors stored with the rows they describe (docs/decisions/matching.md "Matching cost"):
 * computed once when a capability's or a demand's words are written, read by every match. Existing
 * rows are filled here in batches, saying how far it got, so a large table shows progress; a row
 * the batches miss (none should) is still scored, from its text, until its words change.
 */
const batchSize = 500;

async function fill(knex: Knex, table: 'capabilities' | 'demands') {
  let filled = 0;
  for (;;) {
    const rows = (await knex(table).whereNull('term_vector').orderBy('id').limit(batchSize).select('id', 'title', 'description', 'tags')) as {
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
        .update({ term_vector: JSON.stringify(storedVectorOf({ title: row.title, description: row.description, tags })) });
    }
    filled += rows.length;
    process.stderr.write(`018_term_vectors: ${filled} ${table} filled\n`);
  }
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('capabilities', (table) => {
    table.jsonb('term_vector').nullable();
  });
  await knex.schema.alterTable('demands', (table) => {
    table.jsonb('term_vector').nullable();
  });
  await fill(knex, 'capabilities');
  await fill(knex, 'demands');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('capabilities', (table) => {
    table.dropColumn('term_vector');
  });
  await knex.schema.alterTable('demands', (table) => {
    table.dropColumn('term_vector');
  });
}
