import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backfillDeadlines } from '../../src/db/migrations/070_transaction_deadlines.ts';
import { deadlineClauses } from '../../src/store/change-deadlines.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
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

/** The clauses for some writes, each a change of its own numbered from 0, with the deadline records they bind. */
function clausesFor(...writes: Record<string, unknown>[]) {
  const bindings: unknown[] = [];
  const numbered = writes.map((write, ordinal) => ({ change: { transactionId, write: write as { kind: string } }, ordinal: ordinal * 2 }));
  const clauses = deadlineClauses(numbered, bindings);
  return { names: clauses.map((clause) => clause.split(' AS ')[0]), records: bindings.map((binding) => JSON.parse(binding as string) as unknown) };
}
const transactionId = '00000000-0000-4000-8000-000000000001';
const dueAt = new Date('2026-01-01T00:00:00.000Z');

describe('the deadline clauses of a change statement (store/change-deadlines.ts)', () => {
  it('are none, with nothing bound, for writes that start or end no deadline', () => {
    const none = [
      // A task's rows have no deadlines of this table, whatever their status says.
      { kind: 'insert_task', values: { status: 'delivered', auto_confirm_at: dueAt } },
      { kind: 'update_task', fromStatus: 'frozen', set: { status: 'delivered', auto_confirm_at: dueAt } },
      // A patch that names no state leaves the one the row is in, and its deadline, alone.
      { kind: 'update', fromStatus: 'delivered', set: { dispute_reason: 'kept' } },
      // A move that stays in its state leaves it never.
      { kind: 'update', fromStatus: 'frozen', set: { status: 'frozen' } },
      // A frozen purchase that is no invoke has no invoke deadline, as a null or as no column.
      { kind: 'insert', values: { status: 'frozen', invoke_deadline: null } },
      { kind: 'update', fromStatus: 'pending_freeze', set: { status: 'frozen' } },
      // A state without a deadline.
      { kind: 'update', fromStatus: 'accepted', set: { status: 'cancelled' } },
    ];
    for (const write of none) expect(clausesFor(write), JSON.stringify(write)).toEqual({ names: [], records: [] });
    expect(clausesFor(...none)).toEqual({ names: [], records: [] });
  });

  it('start a deadline only where the write enters its state, and end one only where the move leaves it', () => {
    const record = (ordinal: number, kind: string, due: Date | null, ends: boolean) => ({
      ordinal,
      transaction_id: transactionId,
      kind,
      due_at: due?.toISOString() ?? null,
      ends,
    });
    expect(clausesFor({ kind: 'update', fromStatus: 'accepted', set: { status: 'delivered', auto_confirm_at: dueAt } })).toEqual({
      names: ['deadline_input', 'deadlines_started'],
      records: [[record(0, 'auto_confirm', dueAt, false)]],
    });
    expect(clausesFor({ kind: 'update', fromStatus: 'delivered', set: { status: 'settled' } })).toEqual({
      names: ['deadline_input', 'deadlines_ended'],
      records: [[record(0, 'auto_confirm', null, true)]],
    });
    // An invoke is created frozen with its deadline, and its outcome moves it out of frozen.
    const invoke = { kind: 'insert', values: { status: 'frozen', invoke_deadline: dueAt } };
    const outcome = { kind: 'update', fromStatus: 'frozen', set: { status: 'settled' } };
    expect(clausesFor(invoke, outcome)).toEqual({
      names: ['deadline_input', 'deadlines_started', 'deadlines_ended'],
      records: [[record(0, 'invoke', dueAt, false), record(2, 'invoke', null, true)]],
    });
  });
});

describe('the sweep of due deadlines (engine/money/transaction-sweeps.ts)', () => {
  const delivered = async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: { text: 'done' } }).expect(200);
    return { id, buyer };
  };

  it('throw a failure that comes before any row is picked: there is no row to pass over', async () => {
    const { transactions } = test.runtime.engine;
    // Nothing is due, with no rows to pass over named.
    expect(await transactions.failOverdueInvokes(32)).toEqual([]);
    // A query that fails (an id that is no UUID) fails the sweep itself, not one row of it.
    await expect(transactions.autoConfirmDue(32, ['not a transaction id'])).rejects.toThrow();
    await expect(transactions.failOverdueInvokes(32, ['not a transaction id'])).rejects.toThrow();
  });

  it('picks no row whose transaction has left the state, as a sweep racing that move would see it', async () => {
    const left = await delivered();
    await act(test, left.buyer, left.id, 'confirm').expect(200);
    // The deadline is still there, as the sweep could read it before the confirmation deleted it:
    // the transaction is settled, and it is not picked (else its auto-confirm fails and is logged).
    await db()('transaction_deadlines').insert({ transaction_id: left.id, kind: 'auto_confirm', due_at: new Date('2000-01-01T00:00:00Z') });
    const outcomes = await test.runtime.engine.transactions.autoConfirmDue(32);
    expect(outcomes.map((outcome) => outcome.id)).not.toContain(left.id);
    expect(outcomes.filter((outcome) => outcome.error !== undefined)).toEqual([]);
    await db()('transaction_deadlines').where({ transaction_id: left.id }).del();
  });

  it('moves the due rows at once in shared statements; a row another move took first is gone, not failed', async () => {
    const { transactions, transitions } = test.runtime.engine;
    // Whatever earlier tests left due is settled first, so that this sweep sees its own rows.
    test.clock.advanceMs(72 * hourMs + 1000);
    while ((await transactions.autoConfirmDue(32)).length > 0);
    const rows = await Promise.all(Array.from({ length: 6 }, () => delivered()));
    test.clock.advanceMs(72 * hourMs + 1000);
    const before = transitions.batchStats();
    // The buyer of the first confirms while the sweep runs: one of the two moves it, the other finds it gone.
    const [outcomes, confirmed] = await Promise.all([transactions.autoConfirmDue(32), act(test, rows[0]!.buyer, rows[0]!.id, 'confirm')]);
    const after = transitions.batchStats();
    expect(outcomes.filter((outcome) => outcome.error !== undefined)).toEqual([]);
    const moved = outcomes.filter((outcome) => outcome.moved).map((outcome) => outcome.id);
    expect(moved.length + (confirmed.status === 200 ? 1 : 0)).toBe(6);
    expect(new Set(moved).size).toBe(moved.length);
    for (const { id, buyer } of rows)
      expect((await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data.status).toBe('settled');
    // The moves were submitted at once and shared statements: fewer statements than changes.
    expect(after.changes - before.changes).toBeGreaterThanOrEqual(moved.length);
    expect(after.batches - before.batches).toBeLessThan(after.changes - before.changes);
    expect(await checkBooks(db())).toEqual([]);
  });

  it('answers a move that fails with its error, not as gone, and moves the others of the round', async () => {
    const { transactions } = test.runtime.engine;
    test.clock.advanceMs(72 * hourMs + 1000);
    while ((await transactions.autoConfirmDue(32)).length > 0);
    const [broken, healthy] = [await delivered(), await delivered()];
    // The buyer's frozen money taken behind the engine's back: the settlement fails its statement.
    const account = db()('accounts').where({ owner_user_id: broken.buyer.userId, currency: 'UT' });
    const [before] = (await account.clone().select('available', 'frozen')) as { available: string; frozen: string }[];
    await account.clone().update({ frozen: 0, available: BigInt(before!.available) + BigInt(before!.frozen) });
    test.clock.advanceMs(72 * hourMs + 1000);
    const outcomes = await transactions.autoConfirmDue(32);
    const of = (id: string) => outcomes.find((outcome) => outcome.id === id);
    expect(of(healthy.id)).toEqual({ id: healthy.id, moved: true });
    expect(of(broken.id)).toMatchObject({ id: broken.id, moved: false, error: { constraint: 'accounts_frozen_not_negative' } });
    // Passed over by name, the broken row is not picked; repaired, it is moved.
    expect((await transactions.autoConfirmDue(32, [broken.id])).map((outcome) => outcome.id)).not.toContain(broken.id);
    await account.clone().update(before!);
    expect(await transactions.autoConfirmDue(32)).toEqual([{ id: broken.id, moved: true }]);
    expect(await checkBooks(db())).toEqual([]);
  });

  it('two sweeps at once over the same due rows move each once', async () => {
    const { transactions } = test.runtime.engine;
    test.clock.advanceMs(72 * hourMs + 1000);
    while ((await transactions.autoConfirmDue(32)).length > 0);
    const rows = await Promise.all(Array.from({ length: 8 }, () => delivered()));
    test.clock.advanceMs(72 * hourMs + 1000);
    const [first, second] = await Promise.all([transactions.autoConfirmDue(32), transactions.autoConfirmDue(32)]);
    const moved = [...first, ...second].filter((outcome) => outcome.moved).map((outcome) => outcome.id);
    expect(moved.sort()).toEqual(rows.map((row) => row.id).sort());
    expect([...first, ...second].filter((outcome) => outcome.error !== undefined)).toEqual([]);
    expect(await checkBooks(db())).toEqual([]);
  });
});
