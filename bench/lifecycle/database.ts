import os from 'node:os';
import pg from 'pg';

/** The bench database: dropped and recreated for every run, plus server-side counters. */
export function databaseNameOf(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  // Interpolated into DROP/CREATE DATABASE, so only a plain identifier is accepted.
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bench database name must be a plain lowercase identifier, got "${name}"`);
  if (name === 'postgres' || name === 'template0' || name === 'template1') throw new Error(`refusing to drop the "${name}" database`);
  return name;
}

export async function withClient<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export async function recreateDatabase(databaseUrl: string): Promise<void> {
  const name = databaseNameOf(databaseUrl);
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = '/postgres';
  await withClient(maintenance.toString(), async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
}

/**
 * The postmaster's process id: the parent of the backend serving a connection, read while the
 * connection (and so the backend) is still open. NaN when PostgreSQL is not on this host.
 */
export async function postmasterPidOf(databaseUrl: string, parentPid: (pid: number) => number): Promise<number> {
  return withClient(databaseUrl, async (client) => parentPid(Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid)));
}

/** Signs of other work sharing the machine: active sessions of other databases, load average. */
export interface Activity {
  otherActiveBackends: number;
  loadAverage1m: number;
}

export async function otherActivity(databaseUrl: string): Promise<Activity> {
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query(
      `SELECT count(*)::int AS active FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    );
    return { otherActiveBackends: rows[0].active as number, loadAverage1m: Number(os.loadavg()[0]!.toFixed(2)) };
  });
}

export interface ServerInfo {
  version: string;
  settings: Record<string, string>;
}

export async function serverInfo(databaseUrl: string): Promise<ServerInfo> {
  return withClient(databaseUrl, async (client) => {
    const version = (await client.query('SHOW server_version')).rows[0].server_version as string;
    const names = ['shared_buffers', 'synchronous_commit', 'fsync', 'wal_level', 'max_connections', 'shared_preload_libraries'];
    const rows = (await client.query('SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)', [names])).rows as {
      name: string;
      setting: string;
      unit: string | null;
    }[];
    return { version, settings: Object.fromEntries(rows.map((row) => [row.name, row.unit ? `${row.setting} (${row.unit})` : row.setting])) };
  });
}

/** Cumulative counters of the bench database; deltas over a phase give work per lifecycle. */
export interface DatabaseCounters {
  xactCommit: number;
  xactRollback: number;
  tupInserted: number;
  tupUpdated: number;
  tupDeleted: number;
  tupFetched: number;
  walBytes: number;
}

export async function databaseCounters(databaseUrl: string): Promise<DatabaseCounters> {
  const name = databaseNameOf(databaseUrl);
  return withClient(databaseUrl, async (client) => {
    const { rows } = await client.query(
      `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_fetched,
              pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal_bytes
         FROM pg_stat_database WHERE datname = $1`,
      [name],
    );
    const row = rows[0];
    return {
      xactCommit: Number(row.xact_commit),
      xactRollback: Number(row.xact_rollback),
      tupInserted: Number(row.tup_inserted),
      tupUpdated: Number(row.tup_updated),
      tupDeleted: Number(row.tup_deleted),
      tupFetched: Number(row.tup_fetched),
      walBytes: Number(row.wal_bytes),
    };
  });
}

export function countersDelta(before: DatabaseCounters, after: DatabaseCounters): DatabaseCounters {
  return Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - before[key as keyof DatabaseCounters]])) as unknown as DatabaseCounters;
}

/**
 * PostgreSQL 15 flushes a backend's statistics at most once a second and when it goes idle, so
 * counters are read after the load has stopped and the backends have had time to report.
 */
export const statsSettleMs = 2_000;
