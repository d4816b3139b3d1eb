import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemAccountId, userAccountId } from '../../src/store/accounts.ts';
import { applyMovement } from '../../src/store/ledger.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { startTestApp, type TestApp, usingRealBackends, raceTest } from '../helpers/app.ts';
import { act, agentMarket, balance, buy } from '../helpers/market.ts';

/**
 * A move is one SQL statement that reads its snapshot when it starts, then may wait for a row
 * lock held by another transaction. These tests hold such a lock on the buyer's account with a
 * credit in flight and check that the queued freeze is applied to the balance as it is after the
 * credit, never to the stale one it started with: no lost update, no false 4020.
 * Two connections are needed, so they run on PostgreSQL only (the embedded database has one).
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const db = () => test.runtime.database.db;

/** Waits until some statement of this database is blocked on a lock. */
async function someoneWaitsForALock() {
  await until(async () => (await lockWaiters(db())) > 0);
  if ((await lockWaiters(db())) === 0) throw new Error('nobody waited for the lock');
}

/**
 * Starts `request` while a credit of `amountMinor` to the user is written but not committed,
 * waits until the request is blocked on the account's lock, then ends the credit.
 */
async function withCreditInFlight<T>(userId: string, amountMinor: bigint, outcome: 'commit' | 'rollback', request: () => Promise<T>): Promise<T> {
  let pending: Promise<T> | undefined;
  const rolledBack = new Error('rolled back on purpose');
  await db()
    .transaction(async (trx) => {
      await applyMovement(
        trx,
        [
          {
            accountId: systemAccountId('external', 'UT'),
            currency: 'UT',
            bucket: 'available',
            amount: -amountMinor,
            type: 'deposit',
            description: 'test credit',
          },
          { accountId: userAccountId(userId, 'UT'), currency: 'UT', bucket: 'available', amount: amountMinor, type: 'deposit', description: 'test credit' },
        ],
        null,
        new Date(),
      );
      pending = request();
      await someoneWaitsForALock();
      if (outcome === 'rollback') throw rolledBack;
    })
    .catch((error: unknown) => {
      if (error !== rolledBack) throw error;
    });
  return pending!;
}

async function ledgerChainHolds(userId: string) {
  const entries = await db()('ledger_entries')
    .where({ account_id: userAccountId(userId, 'UT') })
    .orderBy('id')
    .select('bucket', 'amount', 'balance_after');
  const running = { available: 0n, frozen: 0n };
  for (const entry of entries) {
    running[entry.bucket as 'available' | 'frozen'] += BigInt(entry.amount);
    expect(BigInt(entry.balance_after)).toBe(running[entry.bucket as 'available' | 'frozen']);
  }
  return running;
}

describe.runIf(usingRealBackends())('a freeze queued behind a credit in flight', () => {
  it('is applied on top of the committed credit: neither is lost', async () => {
    const { buyer, capability } = await agentMarket(test, '0.50', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    const response = await withCreditInFlight(buyer.userId, 500n, 'commit', () => act(test, buyer, id, 'freeze').then((result) => result));
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.data.status).toBe('frozen');
    expect(await balance(test, buyer)).toMatchObject({ available: '4.50', frozen: '1.00' });
    expect(await ledgerChainHolds(buyer.userId)).toEqual({ available: 450n, frozen: 100n });
  });

  it('gets 4020 with the balance after the rollback when the credit is rolled back, and moves nothing', async () => {
    const { buyer, capability } = await agentMarket(test, '0.50', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    const response = await withCreditInFlight(buyer.userId, 500n, 'rollback', () => act(test, buyer, id, 'freeze').then((result) => result));
    expect(response.status, JSON.stringify(response.body)).toBe(402);
    expect(response.body).toMatchObject({ code: 4020, data: { currency: 'UT', available: '0.50', required: '1.00' } });
    expect(await balance(test, buyer)).toMatchObject({ available: '0.50', frozen: '0.00' });
    const transaction = await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200);
    expect(transaction.body.data.status).toBe('pending_freeze');
    expect(await db()('outbox_events').where({ transaction_id: id }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
    expect(await ledgerChainHolds(buyer.userId)).toEqual({ available: 50n, frozen: 0n });
  });
});

describe('a change statement', () => {
  it('keeps working after a migration adds a column to a table it reads (prepared statements are renewed)', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const first = await buy(test, buyer, capability.id);
    expect((await act(test, buyer, first.id, 'freeze')).status).toBe(200);
    await db().raw('ALTER TABLE transactions ADD COLUMN migration_probe integer');
    await db().raw('ALTER TABLE capabilities ADD COLUMN migration_probe integer');
    try {
      const second = await buy(test, buyer, capability.id);
      for (const id of [first.id, second.id]) {
        if (id === second.id) expect((await act(test, buyer, id, 'freeze')).status).toBe(200);
        const accepted = await act(test, seller, id, 'accept');
        expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
      }
    } finally {
      await db().raw('ALTER TABLE transactions DROP COLUMN migration_probe');
      await db().raw('ALTER TABLE capabilities DROP COLUMN migration_probe');
    }
  });

  it('writes nothing at all when it cannot write its event (a party without a stream counter)', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const { id } = await buy(test, buyer, capability.id);
    await db()('event_streams').where({ owner_user_id: seller.userId }).del();
    const response = await act(test, buyer, id, 'freeze');
    expect(response.status).toBe(500);
    expect(response.body.code).toBe(5000);
    const transaction = await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200);
    expect(transaction.body.data.status).toBe('pending_freeze');
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
    expect(await db()('outbox_events').where({ transaction_id: id }).pluck('event_type')).toEqual(['transaction.pending_freeze']);
  });

  it(raceTest('gives 4092 to every create but one that race for the same client task id under different keys'), async () => {
    const { buyer, capability } = await agentMarket(test, '10.00', { price_ut: '1.00' });
    const principal = { user_id: buyer.userId, caller_type: 'agent' as const, platform: null, api_key_id: null };
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, (_, index) =>
        test.runtime.engine.transactions.create(
          principal,
          { capability_id: capability.id, client_task_id: 'same-task' },
          { key: `key-${index}`, operation: 'test create', fingerprint: 'same' },
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    for (const outcome of outcomes.filter((each): each is PromiseRejectedResult => each.status === 'rejected')) {
      expect(outcome.reason).toMatchObject({ code: 4092 });
    }
    expect(await db()('transactions').where({ buyer_user_id: buyer.userId }).count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
  });
});

describe.runIf(usingRealBackends())('durability', () => {
  it('commits state changes durably, and only claims and published marks without waiting for the disk', async () => {
    const show = async (database: typeof test.runtime.database.db) => (await database.raw('SHOW synchronous_commit')).rows[0].synchronous_commit;
    expect(await show(test.runtime.database.db)).toBe('on');
    expect(await show(test.runtime.database.asyncCommitDb)).toBe('off');
    expect(test.runtime.engine.dependencies.db).toBe(test.runtime.database.db);
  });
});
