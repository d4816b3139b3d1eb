import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Runs a raw statement as a named prepared statement. node-postgres parses and plans a named
 * statement once per connection and afterwards only binds and executes it; on the hot path that
 * halves PostgreSQL's work per statement (pgbench: `-M prepared` against `-M extended`). The name
 * is derived from the text, so the same text always has the same name and two texts never share
 * one. The embedded PGlite dialect ignores the name and simply runs the statement.
 */
const namesByText = new Map<string, string>();

function statementName(text: string): string {
  let name = namesByText.get(text);
  if (name === undefined) {
    name = `stmt_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    namesByText.set(text, name);
  }
  return name;
}

export async function prepared<Row>(executor: Knex, text: string, bindings: readonly unknown[]): Promise<Row[]> {
  const raw = executor.raw(text, bindings as Knex.RawBinding[]) as unknown as { options(options: { name: string }): Promise<{ rows: Row[] }> };
  const result = await raw.options({ name: statementName(text) });
  return result.rows;
}
