import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillDeadlines } from '../../src/db/migrations/070_transaction_deadlines.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';

/**
 * A transaction's moves leave the table's indexes alone (HOT updates), and the sweeper's
 * deadlines live in a table of their own that holds only the ones still running
 * (db/migrations/070_transaction_deadlines.ts, store/change-deadlines.ts).
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ AUTO_CONFIRM_HOURS: '72' });
});
afterAll(() => test.close());

const hourMs = 3600 * 1000;
const db = () => test.runtime.database.db;
const rowOf = async (id: string) => (await db()('transactions').where({ id }).first()) as Record<string, unknown>;
const deadlinesOf = async (id: string) =>
  ((await db()('transaction_deadlines').where({ transaction_id: id }).select('kind', 'due_at')) as { kind: string; due_at: Date }[]).map((row) => ({
    kind: row.kind,
    due_at: new Date(row.due_at).toISOString(),
  }));

/** Every column some index of `transactions` names: in its key, its INCLUDE list, its expressions or its predicate. */
async function indexedColumns(): Promise<Map<string, string[]>> {
  const { rows } = (await db().raw(`
    SELECT index.relname AS index_name,
           ARRAY(SELECT attribute.attname FROM pg_attribute attribute
                  WHERE attribute.attrelid = entry.indrelid AND attribute.attnum = ANY (entry.indkey))::text[] AS columns,
           coalesce(pg_get_expr(entry.indexprs, entry.indrelid), '') || ' ' || coalesce(pg_get_expr(entry.indpred, entry.indrelid), '') AS expressions
      FROM pg_index entry JOIN pg_class index ON index.oid = entry.indexrelid
     WHERE entry.indrelid = 'transactions'::regclass`)) as { rows: { index_name: string; columns: string[]; expressions: string }[] };
  const named = new Map<string, string[]>();
  const { rows: all } = (await db().raw(`SELECT attname FROM pg_attribute WHERE attrelid = 'transactions'::regclass AND attnum > 0 AND NOT attisdropped`)) as {
    rows: { attname: string }[];
  };
  for (const row of rows) {
    // An array of names, not its text: a string would spread into letters and name nothing.
    expect(Array.isArray(row.columns)).toBe(true);
    const inExpressions = all.map(({ attname }) => attname).filter((column) => new RegExp(`\\b${column}\\b`).test(row.expressions));
    for (const column of [...row.columns, ...inExpressions]) named.set(column, [...(named.get(column) ?? []), row.index_name]);
  }
  return named;
}

const changedColumns = (before: Record<string, unknown>, after: Record<string, unknown>) =>
  Object.keys(after).filter((column) => JSON.stringify(before[column]) !== JSON.stringify(after[column]));

describe('a transaction moved before it settles', () => {
  it('changes no column that an index of transactions names, so PostgreSQL can keep its indexes as they are', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    const changed = new Set<string>();
    let before = await rowOf(id);
    for (const [actor, action, body] of [
      [buyer, 'freeze', undefined],
      [seller, 'accept', undefined],
      [seller, 'deliver', { result_payload: { text: 'done' } }],
      [buyer, 'dispute', { reason: 'not what was asked' }],
    ] as const) {
      await act(test, actor, id, action, body).expect(200);
      const after = await rowOf(id);
      for (const column of changedColumns(before, after)) changed.add(column);
      before = after;
    }
    // The moves did change what they should, status first: the test saw them.
    expect([...changed]).toEqual(expect.arrayContaining(['status', 'frozen_at', 'accepted_at', 'delivered_at', 'auto_confirm_at', 'dispute_reason']));
    const indexed = await indexedColumns();
    expect([...changed].filter((column) => indexed.has(column)).map((column) => `${column}: ${indexed.get(column)!.join(', ')}`)).toEqual([]);
    // Only the settling move may touch an index: settled_at serves a capability's count of sales.
    expect(indexed.get('settled_at')).toEqual(['transactions_capability_id_settled_at_index']);
  });
});

describe("the sweeper's deadlines", () => {
  it('start with the delivery and end with the confirmation, so only running ones are kept', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    expect(await deadlinesOf(id)).toEqual([]);
    const delivered = (await act(test, seller, id, 'deliver', { result_payload: { text: 'done' } }).expect(200)).body.data;
    expect(await deadlinesOf(id)).toEqual([{ kind: 'auto_confirm', due_at: delivered.auto_confirm_at }]);
    await act(test, buyer, id, 'confirm').expect(200);
    expect(await deadlinesOf(id)).toEqual([]);
  });

  it('end with a dispute, and a disputed transaction is never auto-confirmed', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: { text: 'done' } }).expect(200);
    await act(test, buyer, id, 'dispute', { reason: 'wrong' }).expect(200);
    expect(await deadlinesOf(id)).toEqual([]);
    test.clock.advanceMs(100 * hourMs);
    await test.runtime.engine.sweeper.runOnce();
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data.status).toBe('disputed');
  });

  it('are found again for delivered transactions by the migration, and auto-confirmed when due', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    const delivered = (await act(test, seller, id, 'deliver', { result_payload: { text: 'done' } }).expect(200)).body.data;
    // As before the table existed: the delivered row alone says when it is due.
    await db()('transaction_deadlines').where({ transaction_id: id }).del();
    await backfillDeadlines(db());
    await backfillDeadlines(db());
    expect(await deadlinesOf(id)).toEqual([{ kind: 'auto_confirm', due_at: delivered.auto_confirm_at }]);
    test.clock.advanceMs(72 * hourMs + 1000);
    expect(await test.runtime.engine.sweeper.runOnce()).toBeGreaterThanOrEqual(1);
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data.status).toBe('settled');
    expect(await deadlinesOf(id)).toEqual([]);
  });
});
