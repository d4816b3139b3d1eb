import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

/**
 * Runs a raw statement as a named prepared statement. node-postgres parses and plans a named
 * statement once per connection and afterwards only binds and executes it; on the hot path that
 * halves PostgreSQL's work per statement (pgbench: `-M prepared` against `-M extended`). The name
 * is derived from the text, so the same text always has the same name and two texts never share
 * one. The embedded PGlite dialect ignores the name and simply runs the statement.
 *
 * Outside a transaction on PostgreSQL the statement goes straight to a pooled node-postgres
 * connection: knex's query building, binding rewriting and promise layers cost the server's one
 * thread about a tenth of its time per statement in the lifecycle benchmark.
 */
interface Statement {
  name: string;
  /** The text with `?` placeholders numbered as PostgreSQL wants them: `$1`, `$2`, … */
  positional: string;
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

interface PooledClient {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<void>;
  driverName: string;
}

const statements = new Map<string, Statement>();
/** The pool whose connections plan each named statement once (db/database.ts), by the pool it serves. */
const statementPools = new WeakMap<Knex, Knex>();

export function attachStatementPool(db: Knex, statementDb: Knex) {
  statementPools.set(db, statementDb);
}

/** The pool the named statements on `db` run on: its statement pool, or `db` itself (PGlite, tests' own pools). */
export const statementPoolOf = (db: Knex): Knex => statementPools.get(db) ?? db;
let generation = 0;

function statementOf(text: string): Statement {
  let statement = statements.get(text);
  if (statement === undefined) {
    let position = 0;
    statement = {
      name: `stmt_${createHash('sha1').update(text).digest('hex').slice(0, 24)}_${generation}`,
      // The statement texts of this project use `?` only as a placeholder.
      positional: text.replace(/\?/g, () => `$${++position}`),
    };
    statements.set(text, statement);
  }
  return statement;
}

// The embedded PGlite dialect reuses knex's postgres client (its config says 'pg' too); only
// the driver name tells node-postgres from PGlite.
const isPostgresPool = (executor: Knex) => !(executor as { isTransaction?: boolean }).isTransaction && (executor.client as PooledClient).driverName === 'pg';

/**
 * A table whose columns changed (a migration while the server runs) makes PostgreSQL refuse a
 * statement prepared before (0A000, "cached plan must not change result type"). Then every
 * statement gets a new name, so the next run prepares it afresh on each connection, and the error
 * is retried like a serialization failure (db/transaction.ts).
 */
export const isStalePreparedStatement = (error: unknown) => {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  return code === '0A000' && /cached plan must not change result type/.test(message ?? '');
};

export async function prepared<Row>(executor: Knex, text: string, bindings: readonly unknown[]): Promise<Row[]> {
  try {
    return await run<Row>(executor, text, bindings);
  } catch (error) {
    // The name (not the text, not the bindings) is what the log may show of a failed statement.
    if (error !== null && typeof error === 'object') Object.assign(error, { statement: statementOf(text).name });
    if (isStalePreparedStatement(error)) {
      generation++;
      statements.clear();
    }
    throw error;
  }
}

async function run<Row>(executor: Knex, text: string, bindings: readonly unknown[]): Promise<Row[]> {
  const statement = statementOf(text);
  if (isPostgresPool(executor)) {
    const client = statementPoolOf(executor).client as PooledClient;
    const connection = await client.acquireConnection();
    try {
      const result = await connection.query({ name: statement.name, text: statement.positional, values: bindings as unknown[] });
      return result.rows as Row[];
    } finally {
      await client.releaseConnection(connection);
    }
  }
  const raw = executor.raw(text, bindings as Knex.RawBinding[]) as unknown as { options(options: { name: string }): Promise<{ rows: Row[] }> };
  const result = await raw.options({ name: statement.name });
  return result.rows;
}
