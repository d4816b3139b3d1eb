import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAutoAccept } from '../../src/engine/market/index.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import type { TransactionEngine } from '../../src/engine/money/index.ts';
import { AppError } from '../../src/errors.ts';
import type { Logger } from '../../src/logger.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { balance, credit } from '../helpers/market.ts';

const offer = (title: string, price: string) => ({
  title,
  description: 'Professional translation of documents from English into Chinese',
  category: 'translation',
  capability_type: 'service',
  pricing_model: 'per_use',
  price_ut: price,
  callback_url: 'https://seller.example/callback',
});

/**
 * The races of an automatic purchase are between reading a capability and buying it, and between
 * buying and marking the demand. Through HTTP they cannot be hit on purpose, so these tests build
 * an auto-accept over the app's own engine whose purchase runs a step of the race first (a price
 * change, a slow attempt and a cancel), deterministically.
 */
describe('auto_accept races', () => {
  let test: TestApp;
  const logLines: string[] = [];
  beforeAll(async () => {
    test = await startTestApp();
  });
  afterAll(() => test.close());
  afterEach(async () => {
    await test.runtime.engine.dependencies.db('capabilities').update({ available: false });
    logLines.length = 0;
  });

  const principalOf = (actor: Actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: null, api_key_id: null });
  const db = () => test.runtime.engine.dependencies.db;

  /** An auto-accept whose purchases run `before` first, and whose log lines are kept. */
  function autoAcceptWith(before: () => Promise<void>) {
    const engine = test.runtime.engine;
    const log: Logger = {
      debug: () => {},
      info: (message) => logLines.push(message),
      warn: (message) => logLines.push(message),
      error: (message) => logLines.push(message),
    };
    const transactions: TransactionEngine = {
      ...engine.transactions,
      purchase: async (...args) => {
        await before();
        return engine.transactions.purchase(...args);
      },
    };
    return createAutoAccept({ ...engine.dependencies, log }, transactions, engine.matching);
  }

  /**
   * An open auto-accept demand (budget 40.00) and a fitting capability at 30.00 that the app's own
   * auto-accept has not seen: it is offered above the budget, then repriced in the database.
   */
  async function market() {
    const [requester, seller] = [await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    const demand = await createDemand(test, requester, { description: 'Translate our English manual into Chinese', max_price_ut: '40.00', auto_accept: true });
    const capability = (await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '60.00')).expect(201))
      .body.data as { id: string };
    // The auto-accept job of that offer has run (and bought nothing, above the budget) before the price changes underneath.
    await test.runtime.engine.autoAcceptJobs.idle();
    await db()('capabilities').where({ id: capability.id }).update({ price: '3000' });
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data.status).toBe('open');
    return { requester, seller, demand, capability };
  }

  it('a purchase with max_price refuses a price above it (4093 with both prices, nothing written) and buys at exactly it', async () => {
    const { requester, capability } = await market();
    const purchase = (max: bigint, key: string) =>
      test.runtime.engine.transactions.purchase(principalOf(requester), { capability_id: capability.id, max_price: max }, key);
    const refusal = await purchase(2999n, 'max-price-below').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal).toMatchObject({ errorName: 'price_above_ceiling', code: 4093, data: { currency: 'UT', price: '30.00', max_price: '29.99' } });
    expect(await db()('transactions').where({ buyer_user_id: requester.userId }).count<{ count: string }[]>('* as count')).toEqual([{ count: '0' }]);
    expect(await balance(test, requester)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const { view, failure } = await purchase(3000n, 'max-price-equal');
    expect(failure).toBeUndefined();
    expect(view).toMatchObject({ status: 'frozen', price_ut: '30.00' });
    expect(await balance(test, requester)).toMatchObject({ available: '70.00', frozen: '30.00' });
  });

  it('buys nothing when the seller raises the price above the budget after the capability was scored', async () => {
    const { requester, demand, capability } = await market();
    const autoAccept = autoAcceptWith(async () => {
      await db()('capabilities').where({ id: capability.id }).update({ price: '5000' });
    });
    await autoAccept.forCapability(capability.id);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data).toMatchObject({
      status: 'open',
      transaction_id: null,
    });
    expect(await db()('transactions').where({ buyer_user_id: requester.userId }).count<{ count: string }[]>('* as count')).toEqual([{ count: '0' }]);
    expect(await balance(test, requester)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect(logLines).toContain('auto-accept refused by the purchase; the demand stays open');
    // The claim was given back: a later fitting offer is still bought.
    await db()('capabilities').where({ id: capability.id }).update({ price: '3000' });
    await autoAcceptWith(async () => {}).forCapability(capability.id);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data.status).toBe('fulfilled');
  });

  it('a slow attempt whose demand was cancelled meanwhile does not mark it fulfilled and cancels its purchase', async () => {
    const { requester, demand, capability } = await market();
    const autoAccept = autoAcceptWith(async () => {
      // The attempt outlives the stale window, so the requester may cancel the demand meanwhile.
      test.clock.advanceMs(61_000);
      await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(requester.headers).expect(200);
    });
    await autoAccept.forCapability(capability.id);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data).toMatchObject({
      status: 'cancelled',
      transaction_id: null,
    });
    const purchases = await db()('transactions').where({ buyer_user_id: requester.userId }).select('status');
    expect(purchases).toEqual([{ status: 'cancelled_by_buyer' }]);
    expect(await balance(test, requester)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect(logLines).toContain('auto-accept lost its demand during the purchase; the purchase was cancelled');
  });

  it("does not buy again while an earlier attempt's unfunded purchase of the demand is young", async () => {
    const { requester, demand, capability } = await market();
    // An earlier attempt created its purchase and is still freezing it.
    const { data: earlier } = await test.runtime.engine.transactions.create(
      principalOf(requester),
      { capability_id: capability.id, demand_id: demand.id },
      { key: 'earlier-attempt', operation: 'purchase create', fingerprint: 'earlier-attempt' },
    );
    expect(earlier.status).toBe('pending_freeze');
    await autoAcceptWith(async () => {}).forCapability(capability.id);
    expect(await db()('transactions').where({ buyer_user_id: requester.userId }).select('status')).toEqual([{ status: 'pending_freeze' }]);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data.status).toBe('open');
    // Once it is older than the stale window it was abandoned (no money moved): a new attempt buys.
    test.clock.advanceMs(61_000);
    await autoAcceptWith(async () => {}).forCapability(capability.id);
    const after = (await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data;
    expect(after.status).toBe('fulfilled');
    expect(after.transaction_id).not.toBe(earlier.id);
    expect(await balance(test, requester)).toMatchObject({ available: '70.00', frozen: '30.00' });
  });

  it("a demand's own auto-accept that finds its demand held by a capability's job here waits for it, and answers what it bought", async () => {
    const { requester, demand, capability } = await market();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The capability's job (forCapability) takes the demand first and is slow to buy.
    const autoAccept = autoAcceptWith(() => gate);
    const job = autoAccept.forCapability(capability.id);
    await expect.poll(async () => (await db()('demands').where({ id: demand.id }).first('auto_accept_claimed_at')).auto_accept_claimed_at).not.toBeNull();
    // The demand's create (forDemand) finds it held: it waits for that attempt instead of answering at once.
    let answered = false;
    const create = autoAccept.forDemand(demand.id).then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(answered).toBe(false);
    open();
    await create;
    // Read as the create's answer reads it, before the job's own promise is awaited.
    const after = await db()('demands').where({ id: demand.id }).first('status', 'transaction_id');
    expect(after).toMatchObject({ status: 'fulfilled' });
    await job;
    expect(await balance(test, requester)).toMatchObject({ available: '70.00', frozen: '30.00' });
  });
});
