import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../src/engine/money/index.ts';
import { type StateChange, commitChange, commitChanges, isClientTaskIdTaken } from '../../src/store/change.ts';
import { batcherOptions } from '../helpers/batcher-options.ts';
import { InsufficientBalance, type Leg } from '../../src/store/ledger.ts';

/**
 * The money path's rules that its mutation run (test/mutation/groups.mjs, money-path;
 * docs/decisions/operations-and-testing.md "Mutation testing") found no test for: each case is
 * something the statement of a state change or the group commit must get right, checked without a
 * database by a stand-in that answers each statement as the case says (as
 * test/money/batcher-units.test.ts does), so the answer is exact and needs no timing.
 */
interface Row {
  kind: 'held' | 'changed' | 'event';
  ordinal: number;
  position: number | null;
  id: string | null;
  buyer_sequence: string | null;
  seller_sequence: string | null;
}

interface Seen {
  text: string;
  bindings: unknown[];
}

/** A database stand-in: records every statement and answers the rows `answer` gives (or its error). */
function fakeDatabase(answer: (seen: Seen) => Row[] | Error) {
  const statements: Seen[] = [];
  const executor = {
    client: { driverName: 'fake' },
    raw(text: string, bindings: unknown[]) {
      const seen = { text, bindings };
      statements.push(seen);
      return {
        options: () => {
          const rows = answer(seen);
          return rows instanceof Error ? Promise.reject(rows) : Promise.resolve({ rows });
        },
      };
    },
  };
  return { db: executor as unknown as Knex, statements };
}

const buyerAccount = '00000000-0000-4000-8000-00000000000b';
const leg = (bucket: Leg['bucket'], amount: bigint): Leg => ({ accountId: buyerAccount, currency: 'UT', bucket, amount, type: 'freeze', description: 'test' });

function change(id: string, overrides: Partial<StateChange> = {}): StateChange {
  return {
    transactionId: id,
    buyerUserId: 'buyer',
    sellerUserId: 'seller',
    write: { kind: 'update', fromStatus: 'frozen', fromSequence: 2, set: { status: 'accepted' } },
    legs: [],
    events: [{ type: 'transaction.accepted', payload: {} }],
    at: new Date('2026-01-01T00:00:00Z'),
    ...overrides,
  };
}

const changed = (ordinal: number): Row => ({ kind: 'changed', ordinal, position: null, id: null, buyer_sequence: null, seller_sequence: null });
const event = (ordinal: number, position: number, id: string): Row => ({
  kind: 'event',
  ordinal,
  position,
  id,
  buyer_sequence: String(10 + position),
  seller_sequence: String(20 + position),
});

describe('the column names a state change writes into its statement', () => {
  it.each(['x = 1; status', 'status; --', 'Status', 'status2', 'status ', ''])(
    'refuses %j as a column of an update or an insert, running nothing',
    async (name) => {
      const { db, statements } = fakeDatabase(() => []);
      const update = change('a', { write: { kind: 'update', fromStatus: 'frozen', fromSequence: 2, set: { [name]: 'x' } } });
      await expect(commitChanges(db, [update])).rejects.toThrow(`not a column name: ${name}`);
      const insert = change('b', { write: { kind: 'insert', values: { id: 'b', [name]: 'x' } } });
      await expect(commitChanges(db, [insert])).rejects.toThrow(`not a column name: ${name}`);
      expect(statements).toHaveLength(0);
    },
  );

  it('accepts lowercase names with underscores', async () => {
    const { db, statements } = fakeDatabase(() => [changed(1), event(1, 1, 'e1')]);
    const outcomes = await commitChanges(db, [
      change('a', { write: { kind: 'update', fromStatus: 'frozen', fromSequence: 2, set: { delivery_deadline: null } } }),
    ]);
    expect(outcomes[0]!.kind).toBe('applied');
    expect(statements).toHaveLength(1);
  });
});

describe('the outcome of each change of a statement', () => {
  it('gives a change of two events (a freeze that auto-accepts) its events in the order of the move, whatever order the rows came in', async () => {
    const twoSteps = change('a', {
      events: [
        { type: 'transaction.frozen', payload: {} },
        { type: 'transaction.accepted', payload: {} },
      ],
    });
    const { db } = fakeDatabase(() => [event(1, 2, 'second'), changed(1), event(1, 1, 'first')]);
    const [outcome] = await commitChanges(db, [twoSteps]);
    expect(outcome).toMatchObject({
      kind: 'applied',
      events: [
        { id: 'first', event_type: 'transaction.frozen', transaction_sequence: 3, buyer_sequence: '11', seller_sequence: '21' },
        { id: 'second', event_type: 'transaction.accepted', transaction_sequence: 4, buyer_sequence: '12', seller_sequence: '22' },
      ],
    });
  });

  it('numbers the events of a new transaction from 1, and takes only its own rows', async () => {
    const created = change('new', {
      write: { kind: 'insert', values: { id: 'new', status: 'pending_freeze' } },
      events: [{ type: 'transaction.pending_freeze', payload: {} }],
    });
    const { db } = fakeDatabase(() => [changed(1), changed(2), event(2, 1, 'other'), event(1, 1, 'mine')]);
    const [outcome] = await commitChanges(db, [created, change('moved')]);
    expect(outcome).toEqual({
      kind: 'applied',
      events: [
        {
          id: 'mine',
          transaction_id: 'new',
          transaction_sequence: 1,
          buyer_user_id: 'buyer',
          buyer_sequence: '11',
          seller_user_id: 'seller',
          seller_sequence: '21',
          event_type: 'transaction.pending_freeze',
          payload: {},
          created_at: created.at,
        },
      ],
    });
  });

  it('answers claim_lost to a change whose claim did not hold, stale to one whose row did not match, applied to the others', async () => {
    const claim = (token: string) => ({ scopeHash: `hash-${token}`, token, lockId: '1', responseStatus: 200, responseBody: {} });
    const changes = [change('lost', { claim: claim('t1') }), change('held', { claim: claim('t2') }), change('stale'), change('plain')];
    const held: Row = { kind: 'held', ordinal: 2, position: null, id: null, buyer_sequence: null, seller_sequence: null };
    const { db, statements } = fakeDatabase(() => [held, changed(2), event(2, 1, 'e2'), changed(4), event(4, 1, 'e4')]);
    const outcomes = await commitChanges(db, changes);
    expect(outcomes.map((outcome) => outcome.kind)).toEqual(['claim_lost', 'applied', 'stale', 'applied']);
    // Only the changes without a claim are allowed without one; the claims decide the others.
    expect(statements[0]!.bindings).toContain(JSON.stringify([3, 4]));
    expect(statements[0]!.text).toContain('UNION ALL SELECT ordinal FROM claim_held');
  });

  it('answers stale, not claim_lost, to a change whose claim held but whose row had moved on', async () => {
    const claimed = change('moved-on', { claim: { scopeHash: 'hash', token: 't', lockId: '1', responseStatus: 200, responseBody: {} } });
    const held: Row = { kind: 'held', ordinal: 1, position: null, id: null, buyer_sequence: null, seller_sequence: null };
    const { db } = fakeDatabase(() => [held, changed(2), event(2, 1, 'e2')]);
    expect((await commitChanges(db, [claimed, change('other')])).map((outcome) => outcome.kind)).toEqual(['stale', 'applied']);
  });

  it('refuses a change without an event before any statement, also when it is written alone', async () => {
    const { db, statements } = fakeDatabase(() => []);
    await expect(commitChanges(db, [change('a', { events: [] })])).rejects.toThrow('a state change without an event');
    await expect(commitChange(db, change('a', { events: [] }))).rejects.toThrow('a state change without an event');
    expect(statements).toHaveLength(0);
  });

  it('runs no claim clauses for changes without a claim', async () => {
    const { db, statements } = fakeDatabase(() => [changed(1), event(1, 1, 'e1')]);
    await commitChanges(db, [change('a')]);
    expect(statements[0]!.text).not.toContain('claim_held');
    expect(statements[0]!.text).not.toContain('completed AS');
  });
});

describe('one change alone', () => {
  const shortfall = Object.assign(new Error('new row for relation "accounts" violates check constraint'), {
    code: '23514',
    constraint: 'accounts_available_not_negative',
  });

  it('turns a balance that would go below zero into InsufficientBalance naming the account and the amount', async () => {
    const { db } = fakeDatabase(() => shortfall);
    const freeze = change('a', { legs: [leg('available', -250n), leg('frozen', 250n)] });
    const error: unknown = await commitChange(db, freeze).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InsufficientBalance);
    expect(error).toMatchObject({ accountId: buyerAccount, currency: 'UT', required: 250n });
  });

  it('answers the outcome of the one change', async () => {
    const { db } = fakeDatabase(() => [changed(1), event(1, 1, 'e1')]);
    expect(await commitChange(db, change('a'))).toMatchObject({ kind: 'applied', events: [{ id: 'e1', transaction_id: 'a' }] });
  });

  it('takes only the unique violation of (buyer, client task id) for a client task id taken', () => {
    const violation = (code: string, constraint: string) => Object.assign(new Error('duplicate'), { code, constraint });
    expect(isClientTaskIdTaken(violation('23505', 'transactions_buyer_user_id_client_task_id_unique'))).toBe(true);
    expect(isClientTaskIdTaken(violation('23505', 'transactions_pkey'))).toBe(false);
    expect(isClientTaskIdTaken(violation('23514', 'transactions_buyer_user_id_client_task_id_unique'))).toBe(false);
    expect(isClientTaskIdTaken(new Error('terminating connection'))).toBe(false);
    expect(isClientTaskIdTaken(null)).toBe(false);
  });

  it('throws any other failure as it came', async () => {
    const lost = Object.assign(new Error('terminating connection'), { code: '57P01' });
    const { db } = fakeDatabase(() => lost);
    await expect(commitChange(db, change('a', { legs: [leg('available', -1n), leg('frozen', 1n)] }))).rejects.toBe(lost);
  });
});

describe('the group commit', () => {
  const options = batcherOptions;

  it('counts batch sizes by powers of two', async () => {
    const { db } = fakeDatabase((seen) => {
      const input = seen.bindings.find((binding) => typeof binding === 'string' && binding.includes('"from_status"')) as string;
      const ordinals = (JSON.parse(input) as { ordinal: number }[]).map((row) => row.ordinal);
      return ordinals.flatMap((ordinal) => [changed(ordinal), event(ordinal, 1, `e${ordinal}`)]);
    });
    const batcher = createBatcher(db, options({ changesMax: 5 }));
    await Promise.all(Array.from({ length: 12 }, (_, index) => batcher.submit(change(`t${index}`))));
    // 5, 5 and 2 changes: two batches in 4-7, one in 2-3.
    expect(batcher.stats()).toEqual({
      batches: 3,
      changes: 12,
      splits: 0,
      largest: 5,
      rejoins: 0,
      rejoinsTimedOut: 0,
      rejoinsSkipped: 0,
      trials: null,
      sizes: { '4': 2, '2': 1 },
    });
  });

  it('sends one statement for one change even when another batch could be in the database beside it', async () => {
    const { db, statements } = fakeDatabase(() => [changed(1), event(1, 1, 'e1')]);
    const batcher = createBatcher(db, options({ inFlightMax: 2 }));
    expect((await batcher.submit(change('a'))).kind).toBe('applied');
    await new Promise((resolve) => setImmediate(resolve));
    // No empty batch goes after it: nothing else waits.
    expect(statements).toHaveLength(1);
    expect(batcher.stats()).toEqual({
      batches: 1,
      changes: 1,
      splits: 0,
      largest: 1,
      rejoins: 0,
      rejoinsTimedOut: 0,
      rejoinsSkipped: 0,
      trials: null,
      sizes: { '1': 1 },
    });
  });
});
