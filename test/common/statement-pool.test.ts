import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionBudgetProblem, connectionsPerInstanceMax } from '../../src/db/database.ts';
import { prepared, statementPoolOf } from '../../src/db/prepared.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';

/**
 * The named statements of the hot path (db/prepared.ts: the group commit's change statement, the
 * point reads) run on connections that plan each of them once, while every other query keeps a
 * plan made for its own values (docs/benchmark-history.md "Planned once").
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const setting = async (pool: ReturnType<typeof statementPoolOf>, name: 'plan_cache_mode' | 'enable_seqscan') =>
  ((await pool.raw(`SHOW ${name}`)) as { rows: Record<string, string>[] }).rows[0]![name];
const planCacheMode = (pool: ReturnType<typeof statementPoolOf>) => setting(pool, 'plan_cache_mode');

/**
 * The generic plan a statement that finds rows by an array of keys (as the change statement does)
 * gets on a connection of `pool`, over a table of 200 rows: the size at which the benchmark's
 * fresh database made its plans. A temporary table, so the test sees no other test's rows.
 */
async function keyLookupPlanOn(pool: ReturnType<typeof statementPoolOf>): Promise<string> {
  return pool.transaction(async (trx) => {
    await trx.raw('SET LOCAL plan_cache_mode = force_generic_plan');
    await trx.raw('CREATE TEMPORARY TABLE plan_probe (id uuid PRIMARY KEY, status text) ON COMMIT DROP');
    await trx.raw("INSERT INTO plan_probe SELECT gen_random_uuid(), 'frozen' FROM generate_series(1, 200)");
    await trx.raw('ANALYZE plan_probe');
    await trx.raw('PREPARE plan_probe_lookup(uuid[]) AS SELECT id, status FROM plan_probe WHERE id = ANY ($1)');
    const explained = (await trx.raw("EXPLAIN EXECUTE plan_probe_lookup(ARRAY['00000000-0000-4000-8000-000000000000']::uuid[])")) as {
      rows: { 'QUERY PLAN': string }[];
    };
    await trx.raw('DEALLOCATE plan_probe_lookup');
    return explained.rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

describe('the statement pool', () => {
  it.runIf(usingRealBackends())('plans named statements once and leaves other queries planned for their values', async () => {
    const db = test.runtime.engine.dependencies.db;
    expect(statementPoolOf(db)).not.toBe(db);
    expect(await planCacheMode(statementPoolOf(db))).toBe('force_generic_plan');
    expect(await planCacheMode(db)).toBe('auto');
  });

  it.runIf(usingRealBackends())('finds rows by their key even in a plan made while the table was small', async () => {
    // A plan made once is kept for the connection's life: a sequential scan chosen over a table of
    // a few hundred rows would read the whole table on every run once it has grown.
    const db = test.runtime.engine.dependencies.db;
    expect(await keyLookupPlanOn(db)).toMatch(/Seq Scan on plan_probe/);
    expect(await setting(statementPoolOf(db), 'enable_seqscan')).toBe('off');
    expect(await keyLookupPlanOn(statementPoolOf(db))).toMatch(/Index (Only )?Scan (using|on) plan_probe_pkey/);
  });

  it('answers a named statement with the rows of the database the engine writes to', async () => {
    const db = test.runtime.engine.dependencies.db;
    const [written] = (await db.raw('SELECT count(*)::int AS users FROM users')).rows as { users: number }[];
    const [read] = await prepared<{ users: number }>(db, 'SELECT count(*)::int AS users FROM users WHERE ? = ?', [1, 1]);
    expect(read).toEqual(written);
  });
});

describe('the connections of several workers', () => {
  it("warns when the workers' pools together could pass PostgreSQL's max_connections", () => {
    const each = connectionsPerInstanceMax();
    expect(each).toBe(24);
    expect(connectionBudgetProblem(4, 100)).toBeNull();
    expect(connectionBudgetProblem(5, 100)).toMatch(/5 workers may open up to 120 connections \(24 each\), more than PostgreSQL's max_connections 100/);
    expect(connectionBudgetProblem(5, 200)).toBeNull();
  });
});
