import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import { limits } from '../limits.ts';
import { acquireLockfile } from './lockfile.ts';
import { attachStatementPool } from './prepared.ts';
import { PgliteClient } from './pglite-dialect.ts';

// pg parses int8 to a string by default; numeric too. Money is carried as strings of integer
// minor units and converted to BigInt in the domain layer, never through a float.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => value);

export type Database = Knex;

export interface DatabaseHandle {
  db: Database;
  /**
   * The same database through connections whose commits do not wait for the WAL to reach disk
   * (`synchronous_commit = off`), for writes whose loss in a crash is harmless: the idempotency
   * claim, the published marks of outbox rows. The embedded database has only `db`.
   */
  asyncCommitDb: Database;
  kind: 'postgres' | 'pglite';
  describe: string;
  close(): Promise<void>;
}

/**
 * knex prints its own warnings with console.log, which would land on stdout (and corrupt the
 * CLI's JSON output); they go to stderr instead.
 */
const knexLog = {
  warn: (message: unknown) => process.stderr.write(`knex warning: ${String(message)}\n`),
  error: (message: unknown) => process.stderr.write(`knex error: ${String(message)}\n`),
  deprecate: (message: unknown) => process.stderr.write(`knex deprecation: ${String(message)}\n`),
  debug: () => {},
};

/** The most connections one instance's pools open together (main, statement, asynchronous commit). */
export const connectionsPerInstanceMax = (poolSizeMax: number = limits.databasePoolSizeMax) =>
  poolSizeMax + Math.min(poolSizeMax, limits.statementPoolSizeMax) + Math.min(poolSizeMax, limits.asyncCommitPoolSizeMax);

/**
 * What to warn of when `workers` instances could together open more connections than PostgreSQL's
 * `max_connections` allows: under load the last ones would be refused ("too many clients").
 */
export function connectionBudgetProblem(workers: number, maxConnections: number): string | null {
  const needed = workers * connectionsPerInstanceMax();
  if (needed <= maxConnections) return null;
  return `${workers} workers may open up to ${needed} connections (${connectionsPerInstanceMax()} each), more than PostgreSQL's max_connections ${maxConnections}: raise max_connections or run fewer workers`;
}

export async function openPostgres(connectionString: string, poolSizeMax: number = limits.databasePoolSizeMax): Promise<DatabaseHandle> {
  // While PostgreSQL cannot be reached, a request waits at most databaseAcquireTimeoutMs for a
  // connection and is then answered 503 (src/dependency-failures.ts), not after knex's 60 s.
  const waits = { acquireConnectionTimeout: limits.databaseAcquireTimeoutMs };
  const connecting = { connectionTimeoutMillis: limits.databaseConnectTimeoutMs };
  const db = knex({ client: 'pg', connection: { connectionString, ...connecting }, pool: { min: 0, max: poolSizeMax }, log: knexLog, ...waits });
  const asyncCommitDb = knex({
    client: 'pg',
    connection: { connectionString, options: '-c synchronous_commit=off', ...connecting },
    pool: { min: 0, max: Math.min(poolSizeMax, limits.asyncCommitPoolSizeMax) },
    log: knexLog,
    ...waits,
  });
  // The named statements of db/prepared.ts get connections of their own that plan each of them
  // once: with the default plan_cache_mode a statement is planned afresh on its first five runs
  // per connection and per text, and the change statement has a text per mix of moves in a batch
  // (docs/benchmark-history.md "Planned once"). Other queries keep planning per run, where a
  // parameter's value may choose the index (a partial index, a selective filter). A plan made
  // once is kept for the connection's life, so it must not be a sequential scan chosen while a
  // table was small: every statement here finds rows by key, and with seqscans priced out it
  // uses the key's index however few rows the table had when the plan was made
  // (docs/decisions/limits-and-storage.md "Database connections: three pools").
  const statementDb = knex({
    client: 'pg',
    connection: { connectionString, options: '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off', ...connecting },
    pool: { min: 0, max: Math.min(poolSizeMax, limits.statementPoolSizeMax) },
    log: knexLog,
    ...waits,
  });
  attachStatementPool(db, statementDb);
  const url = new URL(connectionString);
  return {
    db,
    asyncCommitDb,
    kind: 'postgres',
    describe: `PostgreSQL at ${url.hostname}:${url.port || 5432}${url.pathname}`,
    close: async () => {
      await Promise.all([db.destroy(), asyncCommitDb.destroy(), statementDb.destroy()]);
    },
  };
}

/**
 * Opens embedded PGlite. With a directory the data survives restarts and a lockfile guards it;
 * with `memory` it is a throwaway instance for tests, which may start from `loadDataDir` (a
 * dumpDataDir tarball) instead of running initdb, several times faster. PGlite is one connection,
 * so the pool has exactly one: transactions serialize, which is correct if slow.
 */
export async function openPglite(location: { directory: string } | 'memory', options: { loadDataDir?: Blob } = {}): Promise<DatabaseHandle> {
  let releaseLock = () => {};
  let pglite: PGlite;
  if (location === 'memory') {
    pglite = new PGlite({ loadDataDir: options.loadDataDir });
  } else {
    const directory = path.resolve(location.directory);
    mkdirSync(directory, { recursive: true });
    releaseLock = acquireLockfile(path.join(directory, 'pglite.lock'));
    try {
      pglite = new PGlite(path.join(directory, 'pgdata'));
    } catch (error) {
      releaseLock();
      throw error;
    }
  }
  await pglite.waitReady;
  const db = knex({ client: PgliteClient as unknown as typeof knex.Client, connection: { pglite } as never, pool: { min: 1, max: 1 }, log: knexLog });
  return {
    db,
    asyncCommitDb: db,
    kind: 'pglite',
    describe: location === 'memory' ? 'embedded PGlite (in memory)' : `embedded PGlite in ${path.resolve(location.directory)}`,
    close: async () => {
      await db.destroy();
      await pglite.close();
      releaseLock();
    },
  };
}
