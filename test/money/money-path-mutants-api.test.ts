import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { changeHold, createTransitions, newTransactionRow } from '../../src/engine/money/index.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * The money path's rules that its mutation run (test/mutation/groups.mjs, money-path;
 * docs/decisions/operations-and-testing.md "Mutation testing") found no test for and that need a
 * database: through the API where it can arrange the case (what a client is told, what its wallet
 * shows), else at the engine's door (a hold failing on something other than money; a create and a
 * move that must share one batch).
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Json = Record<string, any>;

function purchase(buyer: Actor, capabilityId: string, extra: Json = {}) {
  return test.http
    .post('/api/v1/transactions')
    .set(buyer.headers)
    .set('Idempotency-Key', randomUUID())
    .send({ capability_id: capabilityId, ...extra });
}

describe('a price above what the buyer agreed to', () => {
  it('tells a repeat buyer the price rose and to send max_price, and a buyer whose max_price is too low that it is', async () => {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    await credit(test, buyer.userId, '100.00');
    const capability = (await createCapability(test, seller, { price_ut: '1.00' })) as Json;
    expect((await purchase(buyer, capability.id)).status).toBe(201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '1.50' }).expect(200);

    const rose = (await purchase(buyer, capability.id)).body as Json;
    const why = 'the price rose since your last purchase of this capability; send max_price to accept the new price';
    expect(rose).toMatchObject({ code: 4093, data: { price: '1.50', max_price: '1.00' } });
    expect(rose.data.detail).toBe(`${why}; nothing was charged. To pay 1.50 UT, send max_price "1.50" or more.`);

    const low = (await purchase(buyer, capability.id, { max_price: '1.20' })).body as Json;
    expect(low).toMatchObject({ code: 4093, data: { price: '1.50', max_price: '1.20' } });
    expect(low.data.detail).toMatch(/^the price is above the max_price you sent; nothing was charged/);
  });
});

describe("a task's bounty held and released", () => {
  const valid = {
    title: 'Translate a contract',
    description: 'Ten pages of a supply contract, English into Chinese.',
    mode: 'online',
    category: 'translation',
  };
  const history = async (actor: Actor, taskId: string) =>
    ((await test.http.get('/api/v1/wallet/transactions').set(actor.headers).query({ page_size: 100 }).expect(200)).body.data.items as Json[])
      .filter((entry) => entry.biz_ref_id === taskId)
      .map(({ type, bucket, amount, description }) => ({ type, bucket, amount, description }))
      .reverse();

  it("shows in the publisher's wallet history what was held for which task and what was released", async () => {
    const publisher = await createAgent(test);
    await credit(test, publisher.userId, '50.00');
    const task = (
      await test.http
        .post('/api/v1/tasks/')
        .set(publisher.headers)
        .send({ ...valid, bounty_amount: '20.00' })
        .expect(201)
    ).body.data as Json;
    await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ bounty_amount: '5.00' }).expect(200);
    const held = `bounty of task ${task.id} held`;
    const released = `bounty of task ${task.id} released`;
    expect(await history(publisher, task.id)).toEqual([
      expect.objectContaining({ type: 'freeze', bucket: 'available', amount: '-20.00', description: held }),
      expect.objectContaining({ type: 'freeze', bucket: 'frozen', amount: '20.00', description: held }),
      expect.objectContaining({ type: 'unfreeze', bucket: 'available', amount: '15.00', description: released }),
      expect.objectContaining({ type: 'unfreeze', bucket: 'frozen', amount: '-15.00', description: released }),
    ]);
  });

  it('refuses the bounty of a publisher who never had money, saying that 0.00 is available', async () => {
    const publisher = await createAgent(test);
    const short = await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ ...valid, bounty_amount: '3.00' })
      .expect(402);
    expect(short.body).toMatchObject({ code: 4020, data: { available: '0.00', required: '3.00' } });
  });

  it('passes on a failure of the hold that is not a shortfall, rather than answering it as one, and holds nothing', async () => {
    const publisher = await createAgent(test);
    await credit(test, publisher.userId, '10.00');
    const { db, now } = test.runtime.engine.dependencies;
    // A reference longer than the ledger keeps (64 characters) fails the statement, not the balance.
    const hold = { ownerId: publisher.userId, currency: 'UT' as const, taskId: 'x'.repeat(65), held: 0n, wanted: 100n, at: now() };
    await expect(changeHold(db, hold)).rejects.toMatchObject({ code: '22001' });
    expect(await balance(test, publisher)).toMatchObject({ available: '10.00', frozen: '0.00' });
  });
});

describe('a create and a move in one batch', () => {
  it('writes both in one statement: the new purchase and the freeze of the earlier one', async () => {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    await credit(test, buyer.userId, '10.00');
    const offered = (await createCapability(test, seller, { price_ut: '1.00' })) as Json;
    const { dependencies } = test.runtime.engine;
    // A transitions instance of the test's own, as test/money/group-commit.test.ts uses: its row
    // cache decides the freeze without a read, so the freeze and the create are submitted together.
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const principal: Principal = { user_id: buyer.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null };
    const capability = (await dependencies.db('capabilities').where({ id: offered.id }).first()) as CapabilityRow;
    const create = () =>
      withSingleStatement(dependencies.db, (unit) =>
        transitions.insert(unit, newTransactionRow(principal, { capability_id: capability.id }, capability, 100n, dependencies.now(), 250)),
      );
    const first = await create();
    const before = transitions.batchStats();
    const [frozen, second] = await Promise.all([
      withSingleStatement(dependencies.db, (unit) => transitions.move(unit, first.id, 'freeze', { principal })),
      create(),
    ]);
    expect(transitions.batchStats()).toMatchObject({ batches: before.batches + 1, changes: before.changes + 2 });
    expect(frozen.status).toBe('frozen');
    expect(second.status).toBe('pending_freeze');
    expect(await dependencies.db('transactions').where({ buyer_user_id: buyer.userId }).orderBy('status').pluck('status')).toEqual([
      'frozen',
      'pending_freeze',
    ]);
    expect(await balance(test, buyer)).toMatchObject({ available: '9.00', frozen: '1.00' });
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
  });
});
