import type { Knex } from 'knex';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createBatcher, isChangesOwnFailure, splitBatch } from '../../src/engine/money/index.ts';
import { type ChangeOutcome, type StateChange, assertWritable, commitChanges } from '../../src/store/change.ts';
import { batcherOptions } from '../helpers/batcher-options.ts';
import { InsufficientBalance, type Leg, applyMovement, shortfallOf } from '../../src/store/ledger.ts';

/**
 * The group commit's own rules (engine/money/batcher.ts), without a database: a stand-in for the
 * database answers each statement as the test says, so which changes share a statement, what each
 * is answered and how a failing batch is split are checked exactly, with no timing. What the
 * statement does in a real database is test/money/group-commit.test.ts.
 */
interface Statement {
  ids: string[];
  finish(): void;
}

/** The ids of the changes in a statement, in ordinal order, read from its update input binding. */
function idsOf(bindings: unknown[]): string[] {
  for (const binding of bindings) {
    if (typeof binding !== 'string' || !binding.includes('"from_status"')) continue;
    return (JSON.parse(binding) as { ordinal: number; id: string }[]).sort((a, b) => a.ordinal - b.ordinal).map((row) => row.id);
  }
  throw new Error('no update input in the statement');
}

/**
 * A database stand-in: every statement is recorded; `answer` decides its rows or its failure
 * from the ids in it. With `hold`, a statement waits until the test finishes it.
 */
function fakeDatabase(answer: (ids: string[]) => 'applied' | { stale: string[] } | { fail: Error }, hold = false) {
  const statements: Statement[] = [];
  const executor = {
    client: { driverName: 'fake' },
    raw(_text: string, bindings: unknown[]) {
      const ids = idsOf(bindings);
      return {
        options: () =>
          new Promise((resolve, reject) => {
            const finish = () => {
              const outcome = answer(ids);
              if (typeof outcome === 'object' && 'fail' in outcome) return reject(outcome.fail);
              const stale = outcome === 'applied' ? [] : outcome.stale;
              const rows = ids.flatMap((id, index) =>
                stale.includes(id)
                  ? []
                  : [
                      { kind: 'changed', ordinal: index + 1, position: null, id: null, buyer_sequence: null, seller_sequence: null },
                      { kind: 'event', ordinal: index + 1, position: 1, id: `event-${id}`, buyer_sequence: '7', seller_sequence: '9' },
                    ],
              );
              resolve({ rows });
            };
            statements.push({ ids, finish });
            if (!hold) finish();
          }),
      };
    },
  };
  return { db: executor as unknown as Knex, statements };
}

const buyerAccount = '00000000-0000-4000-8000-00000000000b';

function leg(bucket: Leg['bucket'], amount: bigint): Leg {
  return { accountId: buyerAccount, currency: 'UT', bucket, amount, type: 'freeze', description: 'test' };
}

/** A move of transaction `id`; `takes` makes it a freeze (money out of an available balance). */
function change(id: string, takes = false, legs: Leg[] = takes ? [leg('available', -100n), leg('frozen', 100n)] : []): StateChange {
  return {
    transactionId: id,
    buyerUserId: 'buyer',
    sellerUserId: 'seller',
    write: { kind: 'update', fromStatus: 'frozen', fromSequence: 2, set: { status: 'accepted' } },
    legs,
    events: [{ type: 'transaction.accepted', payload: {} }],
    at: new Date('2026-01-01T00:00:00Z'),
  };
}

const options = batcherOptions;
const shortfall = Object.assign(new Error('new row for relation "accounts" violates check constraint'), {
  code: '23514',
  constraint: 'accounts_available_not_negative',
});
/** Lets the work already queued run: a few turns of the event loop, each after the callbacks queued before it. */
async function settle() {
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
}

afterEach(() => {
  vi.useRealTimers();
});

describe('which changes share a statement', () => {
  it('writes the changes submitted in one turn as one statement and answers each its own outcome', async () => {
    const { db, statements } = fakeDatabase(() => ({ stale: ['b'] }));
    const batcher = createBatcher(db, options());
    const outcomes = await Promise.all(['a', 'b', 'c'].map((id) => batcher.submit(change(id))));
    expect(statements.map((statement) => statement.ids)).toEqual([['a', 'b', 'c']]);
    expect(outcomes[1]).toEqual({ kind: 'stale' });
    expect(outcomes[0]).toMatchObject({ kind: 'applied', events: [{ id: 'event-a', transaction_id: 'a', transaction_sequence: 3, buyer_sequence: '7' }] });
    expect(outcomes[2]).toMatchObject({ kind: 'applied', events: [{ id: 'event-c', transaction_id: 'c', seller_sequence: '9' }] });
    expect(batcher.stats()).toMatchObject({ batches: 1, changes: 3, largest: 3, splits: 0, sizes: { '2': 1 } });
  });

  it('gathers the changes that arrive while a batch is in the database into the next one', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options());
    const first = batcher.submit(change('a'));
    await settle();
    expect(statements).toHaveLength(1);
    const later = ['b', 'c', 'd'].map((id) => batcher.submit(change(id)));
    await settle();
    expect(statements).toHaveLength(1);
    statements[0]!.finish();
    expect(await first).toMatchObject({ kind: 'applied' });
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c', 'd']]);
    statements[1]!.finish();
    expect((await Promise.all(later)).map((outcome) => outcome.kind)).toEqual(['applied', 'applied', 'applied']);
    expect(batcher.stats()).toMatchObject({ batches: 2, changes: 4, largest: 3, sizes: { '1': 1, '2': 1 } });
  });

  it('keeps as many batches in the database as allowed, and no more', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ inFlightMax: 2, changesMax: 1 }));
    const all = ['a', 'b', 'c'].map((id) => batcher.submit(change(id)));
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b']]);
    statements[1]!.finish();
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b'], ['c']]);
    statements[0]!.finish();
    statements[2]!.finish();
    expect((await Promise.all(all)).every((outcome: ChangeOutcome) => outcome.kind === 'applied')).toBe(true);
  });

  it('puts at most changesMax changes in one statement', async () => {
    const { db, statements } = fakeDatabase(() => 'applied');
    const batcher = createBatcher(db, options({ changesMax: 2 }));
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => batcher.submit(change(id))));
    expect(statements.map((statement) => statement.ids)).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(batcher.stats()).toMatchObject({ batches: 3, changes: 5, largest: 2, sizes: { '1': 1, '2': 2 } });
  });

  it('holds a second change of one transaction for the next statement, in its place', async () => {
    const { db, statements } = fakeDatabase((ids) => (statements.length === 2 && ids.includes('a') ? { stale: ['a'] } : 'applied'));
    const batcher = createBatcher(db, options());
    const outcomes = await Promise.all(['a', 'b', 'a', 'c'].map((id) => batcher.submit(change(id))));
    expect(statements.map((statement) => statement.ids)).toEqual([['a', 'b', 'c'], ['a']]);
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['applied', 'applied', 'stale', 'applied']);
  });

  it('waits lingerMs for company when nothing is in the database', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const { db, statements } = fakeDatabase(() => 'applied');
    const batcher = createBatcher(db, options({ lingerMs: 5 }));
    const first = batcher.submit(change('a'));
    await vi.advanceTimersByTimeAsync(4);
    expect(statements).toHaveLength(0);
    const second = batcher.submit(change('b'));
    await vi.advanceTimersByTimeAsync(1);
    expect(statements.map((statement) => statement.ids)).toEqual([['a', 'b']]);
    expect((await first).kind).toBe('applied');
    expect((await second).kind).toBe('applied');
  });
});

describe('waiting for the callers a batch answered', () => {
  it('holds a few waiting changes until the answered callers send their next ones, then writes all in one statement', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ rejoinWaitMs: 1_000 }));
    const answered = ['a', 'b'].map((id) => batcher.submit(change(id)));
    await settle();
    const waiting = batcher.submit(change('c'));
    await settle();
    statements[0]!.finish();
    expect((await Promise.all(answered)).map((outcome) => outcome.kind)).toEqual(['applied', 'applied']);
    await settle();
    // c waits: the two callers just answered are expected back.
    expect(statements).toHaveLength(1);
    const returning = [batcher.submit(change('d'))];
    await settle();
    expect(statements).toHaveLength(1);
    returning.push(batcher.submit(change('e')));
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([
      ['a', 'b'],
      ['c', 'd', 'e'],
    ]);
    statements[1]!.finish();
    expect((await Promise.all([waiting, ...returning])).map((outcome) => outcome.kind)).toEqual(['applied', 'applied', 'applied']);
    // Without trials the batcher always waits, as before them.
    expect(batcher.stats()).toMatchObject({ batches: 2, rejoins: 1, rejoinsTimedOut: 0, rejoinsSkipped: 0, trials: null });
  });

  it('waits no longer than rejoinWaitMs: what waited goes without the callers that do not come back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ rejoinWaitMs: 5 }));
    const answered = batcher.submit(change('a'));
    await settle();
    const waiting = batcher.submit(change('b'));
    await settle();
    statements[0]!.finish();
    expect((await answered).kind).toBe('applied');
    await vi.advanceTimersByTimeAsync(4);
    expect(statements).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b']]);
    statements[1]!.finish();
    expect((await waiting).kind).toBe('applied');
    expect(batcher.stats()).toMatchObject({ rejoins: 1, rejoinsTimedOut: 1 });
  });

  it('does not wait when as many changes as rejoinBelowChanges wait already', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ rejoinWaitMs: 1_000, rejoinBelowChanges: 2 }));
    const first = batcher.submit(change('a'));
    await settle();
    const waiting = ['b', 'c'].map((id) => batcher.submit(change(id)));
    await settle();
    statements[0]!.finish();
    await first;
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c']]);
    statements[1]!.finish();
    await Promise.all(waiting);
    expect(batcher.stats()).toMatchObject({ rejoins: 0 });
  });

  it('counts a change an answered caller in this process sent before the answers went out', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ rejoinWaitMs: 1_000 }));
    // Each caller sends its next change in the very turn it is answered.
    const next: Promise<ChangeOutcome>[] = [];
    const answered = ['a', 'b'].map((id) => batcher.submit(change(id)).then((outcome) => (next.push(batcher.submit(change(`${id}2`))), outcome)));
    await settle();
    const waiting = batcher.submit(change('c'));
    await settle();
    statements[0]!.finish();
    await Promise.all(answered);
    await settle();
    // Both came back before the batcher looked: nothing is waited for.
    expect(statements.map((statement) => statement.ids)).toEqual([
      ['a', 'b'],
      ['c', 'a2', 'b2'],
    ]);
    statements[1]!.finish();
    await Promise.all([waiting, ...next]);
    expect(batcher.stats()).toMatchObject({ rejoins: 0 });
  });

  it('does not wait while another batch is in the database: its answers come later', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ inFlightMax: 2, rejoinWaitMs: 1_000 }));
    const first = batcher.submit(change('a'));
    await settle();
    const second = batcher.submit(change('b'));
    await settle();
    const waiting = batcher.submit(change('c'));
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b']]);
    statements[1]!.finish();
    await second;
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b'], ['c']]);
    statements[0]!.finish();
    statements[2]!.finish();
    await Promise.all([first, waiting]);
    expect(batcher.stats()).toMatchObject({ rejoins: 0 });
  });

  it('does not start waiting when a batch is already on its way', async () => {
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ inFlightMax: 2, rejoinWaitMs: 1_000 }));
    const first = batcher.submit(change('a'));
    await settle();
    // c is scheduled to go (a second batch may be in the database), and a is answered before it leaves.
    const waiting = batcher.submit(change('c'));
    statements[0]!.finish();
    await first;
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['c']]);
    statements[1]!.finish();
    await waiting;
    expect(batcher.stats()).toMatchObject({ rejoins: 0 });
  });

  it('leaves no timer behind when a wait ends because its callers came back, to cut the next wait short', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const batcher = createBatcher(db, options({ rejoinWaitMs: 5 }));
    const all = [batcher.submit(change('a'))];
    await settle();
    all.push(batcher.submit(change('b')));
    await settle();
    statements[0]!.finish();
    await settle();
    // The first wait starts now and ends at once: a's caller is back.
    all.push(batcher.submit(change('c')));
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c']]);
    all.push(batcher.submit(change('d')));
    await vi.advanceTimersByTimeAsync(2);
    statements[1]!.finish();
    await settle();
    // The second wait starts 2 ms after the first did; the first's timer would have ended it at 5 ms.
    await vi.advanceTimersByTimeAsync(4);
    expect(statements).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c'], ['d']]);
    statements[2]!.finish();
    await Promise.all(all);
    expect(batcher.stats()).toMatchObject({ rejoins: 2, rejoinsTimedOut: 1 });
  });

  it('does not hold the next change when nothing waited behind the batch', async () => {
    const { db, statements } = fakeDatabase(() => 'applied');
    const batcher = createBatcher(db, options({ rejoinWaitMs: 1_000 }));
    expect((await batcher.submit(change('a'))).kind).toBe('applied');
    // A caller alone: its next change goes at once, as without the wait.
    expect((await batcher.submit(change('b'))).kind).toBe('applied');
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b']]);
    expect(batcher.stats()).toMatchObject({ rejoins: 0 });
  });
});

describe('a statement that fails', () => {
  it('is split until the change that failed it alone gets the error; the others are written', async () => {
    const { db, statements } = fakeDatabase((ids) => (ids.includes('poor') ? { fail: shortfall } : 'applied'));
    const batcher = createBatcher(db, options());
    const ids = ['a', 'rich', 'poor', 'b', 'c'];
    const answers = await Promise.allSettled(ids.map((id) => batcher.submit(change(id, id === 'rich' || id === 'poor'))));
    expect(answers.map((answer) => answer.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((answers[2] as PromiseRejectedResult).reason).toBe(shortfall);
    // First the changes that take money apart from the rest, then halves of what still fails.
    expect(statements.map((statement) => statement.ids)).toEqual([ids, ['rich', 'poor'], ['rich'], ['poor'], ['a', 'b', 'c']]);
    expect(batcher.stats()).toMatchObject({ batches: 1, changes: 5, splits: 2 });
  });

  it('gives every change the error when the failure is not one a change brought (a lost connection, a deadlock)', async () => {
    const lost = Object.assign(new Error('terminating connection'), { code: '57P01' });
    const { db, statements } = fakeDatabase(() => ({ fail: lost }));
    const batcher = createBatcher(db, options());
    const answers = await Promise.allSettled(['a', 'b'].map((id) => batcher.submit(change(id))));
    expect(answers.map((answer) => (answer as PromiseRejectedResult).reason)).toEqual([lost, lost]);
    expect(statements).toHaveLength(1);
    expect(batcher.stats().splits).toBe(0);
  });

  it('refuses a change no statement may write when it is submitted, and writes the others', async () => {
    const { db, statements } = fakeDatabase(() => 'applied');
    const batcher = createBatcher(db, options());
    const unbalanced = change('bad', false, [leg('available', -100n)]);
    const answers = await Promise.allSettled([batcher.submit(change('a')), batcher.submit(unbalanced), batcher.submit({ ...change('c'), events: [] })]);
    expect(answers.map((answer) => answer.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(statements.map((statement) => statement.ids)).toEqual([['a']]);
  });
});

describe('following its trials of the wait', () => {
  it('waits in an epoch that tries waiting and not in the next, which tries not waiting', async () => {
    // The trials read the process clock; it moves only when the test moves it.
    vi.useFakeTimers({ toFake: ['performance'] });
    const { db, statements } = fakeDatabase(() => 'applied', true);
    const trials = { epochMs: 100, trialEpochs: 8, settledMs: 10_000, marginRatio: 0.05, trialChangesMin: 1, firstTrialAfterChanges: 0 };
    const batcher = createBatcher(db, options({ rejoinWaitMs: 1_000, trials }));
    const first = batcher.submit(change('a'));
    await settle();
    const waitingFirst = batcher.submit(change('b'));
    await settle();
    statements[0]!.finish();
    await first;
    await settle();
    // The trial's first epoch waits: b waits for a's caller.
    expect(statements).toHaveLength(1);
    const returned = batcher.submit(change('c'));
    await settle();
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c']]);
    vi.advanceTimersByTime(100);
    const waitingSecond = batcher.submit(change('d'));
    await settle();
    statements[1]!.finish();
    await Promise.all([waitingFirst, returned]);
    await settle();
    // The second epoch does not wait: d goes at once, without b's and c's callers.
    expect(statements.map((statement) => statement.ids)).toEqual([['a'], ['b', 'c'], ['d']]);
    statements[2]!.finish();
    await waitingSecond;
    expect(batcher.stats()).toMatchObject({ rejoins: 1, rejoinsSkipped: 1, trials: { trials: 0, waits: true } });
  });
});

describe('the rules a split follows', () => {
  it.each([
    ['23514', true],
    ['23505', true],
    ['23502', true],
    ['22003', true],
    ['40P01', false],
    ['40001', false],
    ['57P01', false],
    ['0A000', false],
  ])('takes SQLSTATE %s for a failure a change brought: %s', (code, own) => {
    expect(isChangesOwnFailure(Object.assign(new Error('x'), { code }))).toBe(own);
  });

  it('does not take an error without a SQLSTATE for one', () => {
    expect(isChangesOwnFailure(new Error('socket closed'))).toBe(false);
    expect(isChangesOwnFailure(null)).toBe(false);
    expect(isChangesOwnFailure({ code: 23514 })).toBe(false);
  });

  const waiting = (id: string, legs: Leg[]) => ({ change: change(id, false, legs) });
  const ids = (parts: { change: StateChange }[][]) => parts.map((part) => part.map((each) => each.change.transactionId));

  it('parts the changes that take from an available balance from the others', () => {
    const batch = [
      waiting('release', [leg('frozen', -100n), leg('available', 100n)]),
      waiting('freeze', [leg('available', -100n), leg('frozen', 100n)]),
      waiting('move', []),
    ];
    expect(ids(splitBatch(batch))).toEqual([['freeze'], ['release', 'move']]);
  });

  it('halves a batch whose changes are all alike, the first half the larger', () => {
    const takers = ['a', 'b', 'c'].map((id) => waiting(id, [leg('available', -1n), leg('frozen', 1n)]));
    expect(ids(splitBatch(takers))).toEqual([['a', 'b'], ['c']]);
    const others = ['a', 'b', 'c', 'd'].map((id) => waiting(id, []));
    expect(ids(splitBatch(others))).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
  });
});

describe('what no statement may write', () => {
  it.each([
    ['an unbalanced movement', change('a', false, [leg('available', -100n)]), 'unbalanced movement in UT: -100'],
    ['a leg of zero', change('a', false, [leg('available', 0n)]), 'a ledger leg of zero'],
    ['a change without an event', { ...change('a'), events: [] }, 'a state change without an event'],
  ])('refuses %s, naming it', (_name, refused, message) => {
    expect(() => assertWritable([refused])).toThrow(message);
  });

  it('refuses two changes of one transaction in one statement', () => {
    expect(() => assertWritable([change('a'), change('b'), change('a')])).toThrow('two changes of one transaction in one statement');
    expect(() => assertWritable([change('a'), change('b')])).not.toThrow();
  });

  it('refuses a column name that is not one (the names are written into the statement)', async () => {
    const { db } = fakeDatabase(() => 'applied');
    const injected = { ...change('a'), write: { kind: 'update' as const, fromStatus: 'frozen', fromSequence: 2, set: { 'status = 1; --': 'x' } } };
    await expect(commitChanges(db, [injected])).rejects.toThrow('not a column name: status = 1; --');
  });

  it('refuses a movement without legs outside a change', async () => {
    const { db } = fakeDatabase(() => 'applied');
    await expect(applyMovement(db, [], null, new Date())).rejects.toThrow('a movement without legs');
  });
});

describe('which account fell short', () => {
  const constraint = Object.assign(new Error('check'), { code: '23514', constraint: 'accounts_available_not_negative' });
  const debit = (accountId: string, amount: bigint): Leg => ({ accountId, currency: 'UT', bucket: 'available', amount, type: 'freeze', description: 'x' });

  it('is the account the movement takes the most from, with what it takes net', () => {
    const legs = [
      debit('small', -100n),
      debit('large', -300n),
      debit('large', 50n),
      debit('credit', 350n),
      { ...debit('small', -900n), bucket: 'frozen' as const },
    ];
    const shortfall = shortfallOf(constraint, legs);
    expect(shortfall).toBeInstanceOf(InsufficientBalance);
    expect(shortfall).toMatchObject({ accountId: 'large', currency: 'UT', required: 250n });
    expect(shortfallOf(constraint, [debit('b', -100n), debit('a', -200n), debit('c', -50n)])).toMatchObject({ accountId: 'a', required: 200n });
    expect(shortfallOf(constraint, [debit('a', -200n), debit('b', -100n)])).toMatchObject({ accountId: 'a', required: 200n });
  });

  it('is nobody for another failure, or a movement that takes from no available balance', () => {
    expect(shortfallOf(Object.assign(new Error('x'), { code: '23514', constraint: 'accounts_frozen_not_negative' }), [debit('a', -1n)])).toBeNull();
    expect(shortfallOf(Object.assign(new Error('x'), { code: '23505', constraint: 'accounts_available_not_negative' }), [debit('a', -1n)])).toBeNull();
    expect(shortfallOf(constraint, [debit('a', 100n)])).toBeNull();
  });
});
