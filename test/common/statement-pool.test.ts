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

const planCacheMode = async (pool: ReturnType<typeof statementPoolOf>) =>
  ((await pool.raw('SHOW plan_cache_mode')) as { rows: { plan_cache_mode: string }[] }).rows[0]!.plan_cache_mode;

describe('the statement pool', () => {
  it.runIf(usingRealBackends())('plans named statements once and leaves other queries planned for their values', async () => {
    const db = test.runtime.engine.dependencies.db;
    expect(statementPoolOf(db)).not.toBe(db);
    expect(await planCacheMode(statementPoolOf(db))).toBe('force_generic_plan');
    expect(await planCacheMode(db)).toBe('auto');
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
