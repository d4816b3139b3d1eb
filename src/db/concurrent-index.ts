import type { Knex } from 'knex';

/**
 * Builds an index CONCURRENTLY, so that a large table keeps taking reads and writes meanwhile
 * (PostgreSQL refuses it inside a database transaction: the migration says `config.transaction =
 * false`). A build that failed halfway leaves an invalid index under the name, which is dropped and
 * built again; a valid one is left as it is.
 */
export async function createIndexConcurrently(knex: Knex, name: string, definition: string): Promise<void> {
  const invalid = await knex.raw(
    `SELECT 1 FROM pg_index JOIN pg_class ON pg_class.oid = pg_index.indexrelid WHERE pg_class.relname = ? AND NOT pg_index.indisvalid`,
    [name],
  );
  if (invalid.rows.length > 0) await knex.raw(`DROP INDEX CONCURRENTLY ${name}`);
  await knex.raw(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ${definition}`);
}
