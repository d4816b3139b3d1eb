import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { withClient } from './database.ts';

/**
 * The raw database ceiling: pgbench replaying, per transaction, the SQL work of one state
 * change, on copies of the real tables (CREATE TABLE bench_x (LIKE x INCLUDING ALL): same
 * columns, defaults, CHECKs and indexes, no foreign keys):
 *   BEGIN; guarded status UPDATE … RETURNING *; two balance UPDATEs in sorted id order
 *   (the engine's exact guarded statement); two ledger INSERTs; one outbox INSERT; COMMIT.
 * Ids are drawn at random from 10 000 transactions and 10 000 accounts, so clients rarely
 * touch the same row: no more contention than the real run, where client i owns its pair.
 * -M extended matches node-postgres, which sends parameterized statements unnamed, parsing
 * every one again.
 */
const execFileAsync = promisify(execFile);

export const rawRows = { transactions: 10_000, accounts: 10_000 };

const statuses = ['pending_freeze', 'frozen', 'accepted', 'delivered'];

/** A realistic outbox payload: the transaction view the engine writes, about 900 bytes. */
function samplePayload(): string {
  const at = '2025-06-01T12:00:00.000Z';
  const transaction = {
    id: '00000000-0000-0000-0000-000000000001',
    buyer_user_id: '6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f',
    seller_user_id: '7a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
    capability_id: '8b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
    demand_id: null,
    transaction_type: 'per_use',
    context_id: '9c4d5e6f-7a8b-4c9d-8e1f-2a3b4c5d6e7f',
    price_ut: '1.00',
    currency: 'UT',
    booked_hours: null,
    status: 'accepted',
    result_payload: null,
    frozen_at: at,
    accepted_at: at,
    delivered_at: null,
    confirmed_at: null,
    settled_at: null,
    delivery_deadline: at,
    auto_confirm_at: null,
    created_at: at,
    updated_at: at,
  };
  // A space after every colon: pgbench would read `:null` as a variable reference.
  return JSON.stringify({ action: 'accept', previous_status: 'frozen', transaction }).replaceAll('":', '": ');
}

export function rawScript(): string {
  const uuidOf = (variable: string) => `lpad(to_hex(:${variable}::int), 32, '0')::uuid`;
  const next = `CASE status ${statuses.map((status, index) => `WHEN '${status}' THEN '${statuses[(index + 1) % statuses.length]}'`).join(' ')} END`;
  const account = (variable: string, available: number, frozen: number) =>
    `UPDATE bench_accounts SET available = available + (${available})::bigint, frozen = frozen + (${frozen})::bigint ` +
    `WHERE id = ${uuidOf(variable)} AND (kind = 'external' OR available + (${available})::bigint >= 0) AND frozen + (${frozen})::bigint >= 0 RETURNING available, frozen;`;
  const ledger = (variable: string, bucket: string, amount: number) =>
    `INSERT INTO bench_ledger_entries (movement_id, account_id, currency, bucket, type, amount, balance_after, description, biz_ref_id, created_at) ` +
    `VALUES (gen_random_uuid(), ${uuidOf(variable)}, 'UT', '${bucket}', 'freeze', ${amount}, 1000000000000, 'Funds frozen for a purchase', :tx_id, now());`;
  return [
    `\\set n random(1, ${rawRows.transactions})`,
    `\\set a1 random(1, ${rawRows.accounts})`,
    `\\set a2 random(1, ${rawRows.accounts})`,
    `\\set lo least(:a1, :a2)`,
    `\\set hi greatest(:a1, :a2)`,
    'BEGIN;',
    `UPDATE bench_transactions SET status = ${next}, event_sequence = event_sequence + 1, updated_at = now() ` +
      `WHERE id = ${uuidOf('n')} AND status IN (${statuses.map((status) => `'${status}'`).join(', ')}) RETURNING * \\gset tx_`,
    account('lo', -100, 100),
    account('hi', 100, -0),
    ledger('lo', 'frozen', 100),
    ledger('hi', 'available', 100),
    `INSERT INTO bench_outbox_events (transaction_id, transaction_sequence, buyer_user_id, buyer_sequence, seller_user_id, seller_sequence, event_type, payload, created_at) ` +
      `VALUES (:tx_id, :tx_event_sequence, :tx_buyer_user_id, :tx_event_sequence, :tx_seller_user_id, :tx_event_sequence, 'transaction.accepted', '${samplePayload()}'::jsonb, now()) RETURNING *;`,
    'COMMIT;',
    '',
  ].join('\n');
}

/**
 * The same writes as rawScript() collapsed into one autocommit statement (data-modifying CTEs):
 * what a state change costs PostgreSQL if the engine sent each move as a single statement, with
 * no BEGIN, no separate COMMIT and one parse/bind/execute instead of seven. For reference only.
 */
export function rawSingleStatementScript(): string {
  const uuidOf = (variable: string) => `lpad(to_hex(:${variable}::int), 32, '0')::uuid`;
  const next = `CASE status ${statuses.map((status, index) => `WHEN '${status}' THEN '${statuses[(index + 1) % statuses.length]}'`).join(' ')} END`;
  const account = (variable: string, available: number, frozen: number) =>
    `UPDATE bench_accounts SET available = available + (${available})::bigint, frozen = frozen + (${frozen})::bigint ` +
    `WHERE id = ${uuidOf(variable)} AND (kind = 'external' OR available + (${available})::bigint >= 0) AND frozen + (${frozen})::bigint >= 0 RETURNING available, frozen`;
  const entry = (variable: string, bucket: string) =>
    `SELECT gen_random_uuid(), ${uuidOf(variable)}, 'UT', '${bucket}', 'freeze', 100, 1000000000000, 'Funds frozen for a purchase', tx.id::text, now() FROM tx`;
  return [
    `\\set n random(1, ${rawRows.transactions})`,
    `\\set a1 random(1, ${rawRows.accounts})`,
    `\\set a2 random(1, ${rawRows.accounts})`,
    `\\set lo least(:a1, :a2)`,
    `\\set hi greatest(:a1, :a2)`,
    `WITH tx AS (UPDATE bench_transactions SET status = ${next}, event_sequence = event_sequence + 1, updated_at = now() ` +
      `WHERE id = ${uuidOf('n')} AND status IN (${statuses.map((status) => `'${status}'`).join(', ')}) RETURNING *), ` +
      `lo AS (${account('lo', -100, 100)}), hi AS (${account('hi', 100, 0)}), ` +
      `ledger AS (INSERT INTO bench_ledger_entries (movement_id, account_id, currency, bucket, type, amount, balance_after, description, biz_ref_id, created_at) ` +
      `${entry('lo', 'frozen')} UNION ALL ${entry('hi', 'available')}) ` +
      `INSERT INTO bench_outbox_events (transaction_id, transaction_sequence, buyer_user_id, buyer_sequence, seller_user_id, seller_sequence, event_type, payload, created_at) ` +
      `SELECT tx.id, tx.event_sequence, tx.buyer_user_id, tx.event_sequence, tx.seller_user_id, tx.event_sequence, 'transaction.accepted', '${samplePayload()}'::jsonb, now() FROM tx RETURNING *;`,
    '',
  ].join('\n');
}

/**
 * rawSingleStatementScript()'s statement as a parameterized query for a Node client ($1: the
 * transaction, $2 and $3: the two accounts, lower first; each drawn from 1 to rawRows), so a bare
 * server can commit the same escrow step pgbench does (bench/fanout/bare-server.ts).
 */
export function rawSingleStatementQuery(): string {
  const statement = rawSingleStatementScript()
    .split('\n')
    .find((line) => line.startsWith('WITH '))!;
  const parameter = { n: '$1', lo: '$2', hi: '$3' } as const;
  return statement.replace(/:(n|lo|hi)::int/g, (_, name: keyof typeof parameter) => `${parameter[name]}::int`).replace(/;$/, '');
}

/** Creates and fills the bench_* copies. Run after the server has migrated the real tables. */
export async function prepareRawTables(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    for (const table of ['transactions', 'accounts', 'ledger_entries', 'outbox_events']) {
      await client.query(`DROP TABLE IF EXISTS bench_${table}`);
      await client.query(`CREATE TABLE bench_${table} (LIKE ${table} INCLUDING ALL)`);
    }
    // The copies share the originals' id sequences; give them their own so they never collide.
    for (const table of ['ledger_entries', 'outbox_events']) {
      await client.query(`CREATE SEQUENCE bench_${table}_id_seq OWNED BY bench_${table}.id`);
      await client.query(`ALTER TABLE bench_${table} ALTER COLUMN id SET DEFAULT nextval('bench_${table}_id_seq')`);
    }
    await client.query(
      `INSERT INTO bench_accounts (id, kind, owner_user_id, currency, available, frozen)
       SELECT lpad(to_hex(n), 32, '0')::uuid, 'user', gen_random_uuid(), 'UT', 1000000000000, 1000000000000
         FROM generate_series(1, $1::int) AS n`,
      [rawRows.accounts],
    );
    await client.query(
      `INSERT INTO bench_transactions (id, buyer_user_id, seller_user_id, capability_id, context_id, space, currency, transaction_type,
                                       price, auto_accept, status, event_sequence, frozen_at, created_at, updated_at)
       SELECT lpad(to_hex(n), 32, '0')::uuid, gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'agent', 'UT', 'per_use',
              100, false, (ARRAY['pending_freeze', 'frozen', 'accepted', 'delivered'])[1 + n % 4], 1, now(), now(), now()
         FROM generate_series(1, $1::int) AS n`,
      [rawRows.transactions],
    );
    await client.query('VACUUM ANALYZE bench_accounts, bench_transactions, bench_ledger_entries, bench_outbox_events');
  });
}

/**
 * Drops the bench_* copies. After the pgbench run before the product's, so that autovacuum of
 * their updated rows (a backend of the bench database, counted as PostgreSQL's CPU) does not run
 * during the product's measured run; the run after the product prepares them again.
 */
export async function dropRawTables(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, async (client) => {
    for (const table of ['transactions', 'accounts', 'ledger_entries', 'outbox_events']) await client.query(`DROP TABLE IF EXISTS bench_${table}`);
  });
}

export interface PgbenchResult {
  tps: number;
  transactions: number;
  failed: number;
  latencyAverageMs: number;
  /** Average latency of each statement of the script (pgbench -r), in order. */
  statementLatencyMs: { ms: number; statement: string }[];
  command: string;
  output: string;
}

export async function runPgbench(
  databaseUrl: string,
  concurrency: number,
  seconds: number,
  outDirectory: string,
  mode: 'extended' | 'prepared' = 'extended',
  script = rawScript(),
  name = 'raw-state-change',
): Promise<PgbenchResult> {
  mkdirSync(outDirectory, { recursive: true });
  const scriptPath = path.resolve(outDirectory, `${name}.pgbench.sql`);
  writeFileSync(scriptPath, script);
  const threads = Math.min(2, concurrency);
  const args = ['-n', '-M', mode, '-c', String(concurrency), '-j', String(threads), '-T', String(seconds), '-r', '-f', scriptPath, databaseUrl];
  const pgbench = process.env.PGBENCH ?? '/usr/bin/pgbench';
  const { stdout, stderr } = await execFileAsync(pgbench, args, { maxBuffer: 16 * 1024 * 1024 });
  const output = `${stdout}\n${stderr}`;
  const number = (pattern: RegExp) => Number(pattern.exec(output)?.[1] ?? Number.NaN);
  const statementLatencyMs = [...stdout.matchAll(/^\s+([\d.]+)\s+\d+\s+(.+)$/gm)].map((match) => ({
    ms: Number(match[1]),
    statement: match[2]!.trim().slice(0, 120),
  }));
  return {
    tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
    transactions: number(/number of transactions actually processed: (\d+)/),
    failed: number(/number of failed transactions: (\d+)/),
    latencyAverageMs: number(/latency average = ([\d.]+) ms/),
    statementLatencyMs,
    command: `${pgbench} ${args.join(' ')}`,
    output,
  };
}
