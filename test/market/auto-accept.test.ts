import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { type TestApp, raceTest, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { balance, credit } from '../helpers/market.ts';

const offer = (title: string, price: string, extra: Record<string, unknown> = {}) => ({
  title,
  description: 'Professional translation of documents from English into Chinese',
  category: 'translation',
  capability_type: 'service',
  pricing_model: 'per_use',
  price_ut: price,
  callback_url: 'https://seller.example/callback',
  ...extra,
});

/**
 * Auto-accept for a capability offered anew runs as a job after the request (engine/market/auto-accept-jobs.ts):
 * wait until this instance's runner has nothing left before reading what it bought.
 */
const jobsDone = (app: TestApp) => app.runtime.engine.autoAcceptJobs.idle();

describe('auto_accept on a demand', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp();
  });
  afterAll(() => test.close());
  // Every test sells translations; the previous test's offers are withdrawn (as a delete will) so
  // that each test sees only its own market.
  afterEach(async () => {
    await test.runtime.engine.dependencies.db('capabilities').update({ available: false });
  });

  async function transactionsOf(buyer: { headers: Record<string, string> }) {
    return (await test.http.get('/api/v1/transactions?role=buyer').set(buyer.headers).expect(200)).body.data.items as {
      id: string;
      status: string;
      demand_id: string;
      price_ut: string;
    }[];
  }

  it('buys an existing good match within budget when the demand is created: frozen once, in the stream, demand fulfilled', async () => {
    const [requester, seller] = [await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    const capability = (await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '30.00')).expect(201))
      .body.data;
    // The capability's own auto-accept job (it looks for waiting demands) has run: on a loaded
    // machine it could otherwise still be pending, take the new demand first and leave the create's
    // answer 'open' while it buys (a purchase all the same, but not the one this test is about).
    await jobsDone(test);
    const demand = await createDemand(test, requester, { description: 'Translate our English manual into Chinese', max_price_ut: '40.00', auto_accept: true });
    expect(demand.status).toBe('fulfilled');
    const [bought] = await transactionsOf(requester);
    expect(bought).toMatchObject({ id: demand.transaction_id, status: 'frozen', demand_id: demand.id, price_ut: '30.00' });
    expect((await test.http.get(`/api/v1/transactions/${bought!.id}`).set(seller.headers).expect(200)).body.data.capability_id).toBe(capability.id);
    expect(await balance(test, requester)).toMatchObject({ available: '70.00', frozen: '30.00' });
    // The requester's event stream carries the purchase like any other.
    const events = await test.runtime.engine.dependencies.db('outbox_events').where({ transaction_id: bought!.id }).select('*');
    expect(events.length).toBeGreaterThan(0);
    // Once fulfilled, it buys nothing more, and cannot be cancelled.
    await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('Chinese translation of manuals', '20.00')).expect(201);
    expect(await transactionsOf(requester)).toHaveLength(1);
    expect((await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(requester.headers).expect(409)).body.data).toMatchObject({ status: 'fulfilled' });
  });

  it('buys when an update re-offers or reprices a capability into the budget, and when a batch registers one', async () => {
    const [requester, seller] = [await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    const pricey = (await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '60.00')).expect(201)).body
      .data;
    const demand = await createDemand(test, requester, { description: 'Translate our English manual into Chinese', max_price_ut: '40.00', auto_accept: true });
    expect(demand.status).toBe('open');
    await test.http.put(`/api/v1/capabilities/${pricey.id}`).set(seller.headers).send({ price_ut: '35.00' }).expect(200);
    await jobsDone(test);
    const [bought] = await transactionsOf(requester);
    expect(bought).toMatchObject({ status: 'frozen', demand_id: demand.id, price_ut: '35.00' });

    const second = await createDemand(test, requester, {
      description: 'Translate our English brochure into Chinese',
      max_price_ut: '30.00',
      auto_accept: true,
    });
    expect(second.status).toBe('open');
    const batch = await test.http
      .post('/api/v1/capabilities/batch')
      .set(seller.headers)
      .send({ items: [{ title: 'x' }, offer('Chinese translation of brochures', '25.00')] })
      .expect(200);
    expect(batch.body.data).toMatchObject({ succeeded: 1, failed: 1 });
    await jobsDone(test);
    const purchases = await transactionsOf(requester);
    expect(purchases).toHaveLength(2);
    expect(purchases.find((purchase) => purchase.demand_id === second.id)).toMatchObject({ status: 'frozen', price_ut: '25.00' });
    expect(await balance(test, requester)).toMatchObject({ available: '40.00', frozen: '60.00' });
  });

  it('buys nothing above the budget, for a poor match, or without auto_accept', async () => {
    const [requester, seller] = [await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '60.00')).expect(201);
    await test.http
      .post('/api/v1/capabilities')
      .set(seller.headers)
      .send({ ...offer('Logo design', '5.00'), description: 'Minimalist logo design for shops', category: 'design' })
      .expect(201);
    const tooCheap = await createDemand(test, requester, {
      description: 'Translate our English manual into Chinese',
      max_price_ut: '40.00',
      auto_accept: true,
    });
    const unrelated = await createDemand(test, requester, { description: 'Fix my bicycle brakes', max_price_ut: '40.00', auto_accept: true });
    const manual = await createDemand(test, requester, { description: 'Translate our English manual into Chinese', max_price_ut: '80.00' });
    expect([tooCheap.status, unrelated.status, manual.status]).toEqual(['open', 'open', 'open']);
    expect(await transactionsOf(requester)).toHaveLength(0);
    expect(await balance(test, requester)).toMatchObject({ available: '100.00', frozen: '0.00' });
  });

  it('leaves the demand open and moves no money when the balance is short; a later capability is bought once funded', async () => {
    const logLines: string[] = [];
    const logged = await startTestApp({}, { logLines });
    try {
      const [requester, seller] = [await createAgent(logged), await createAgent(logged)];
      await credit(logged, requester.userId, '10.00');
      await logged.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '30.00')).expect(201);
      const demand = await createDemand(logged, requester, {
        description: 'Translate our English manual into Chinese',
        max_price_ut: '40.00',
        auto_accept: true,
      });
      expect(demand.status).toBe('open');
      expect((await logged.http.get('/api/v1/transactions').set(requester.headers).expect(200)).body.data.total).toBe(0);
      expect(await balance(logged, requester)).toMatchObject({ available: '10.00', frozen: '0.00' });
      expect(logLines.some((line) => line.includes('insufficient balance'))).toBe(true);
      await credit(logged, requester.userId, '50.00');
      // The capability side: a new capability that fits is bought at its creation.
      const later = (await logged.http.post('/api/v1/capabilities').set(seller.headers).send(offer('Chinese translation service', '25.00')).expect(201)).body
        .data;
      await jobsDone(logged);
      const after = (await logged.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data;
      expect(after.status).toBe('fulfilled');
      const bought = (await logged.http.get(`/api/v1/transactions/${after.transaction_id}`).set(requester.headers).expect(200)).body.data;
      expect(bought).toMatchObject({ capability_id: later.id, status: 'frozen', demand_id: demand.id });
      expect(await balance(logged, requester)).toMatchObject({ available: '35.00', frozen: '25.00' });
    } finally {
      await logged.close();
    }
  });

  it('does not buy for an expired demand', async () => {
    const [requester, seller] = [await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    const expiresAt = new Date(test.runtime.engine.dependencies.now().getTime() + 60_000).toISOString();
    const demand = await createDemand(test, requester, {
      description: 'Translate our English manual into Chinese',
      max_price_ut: '40.00',
      auto_accept: true,
      expires_at: expiresAt,
    });
    test.clock.advanceMs(120_000);
    await test.http.post('/api/v1/capabilities').set(seller.headers).send(offer('English to Chinese translation', '30.00')).expect(201);
    await jobsDone(test);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data.status).toBe('expired');
    expect(await transactionsOf(requester)).toHaveLength(0);
  });

  it(raceTest('buys once when two fitting capabilities appear at the same time'), async () => {
    const [requester, sellerA, sellerB] = [await createAgent(test), await createAgent(test), await createAgent(test)];
    await credit(test, requester.userId, '100.00');
    const demand = await createDemand(test, requester, { description: 'Translate our English manual into Chinese', max_price_ut: '40.00', auto_accept: true });
    expect(demand.status).toBe('open');
    await Promise.all([
      test.http.post('/api/v1/capabilities').set(sellerA.headers).send(offer('English to Chinese translation', '30.00')).expect(201),
      test.http.post('/api/v1/capabilities').set(sellerB.headers).send(offer('English to Chinese translation', '30.00')).expect(201),
    ]);
    await jobsDone(test);
    const bought = await transactionsOf(requester);
    expect(bought).toHaveLength(1);
    expect(bought[0]).toMatchObject({ status: 'frozen', demand_id: demand.id });
    expect(await balance(test, requester)).toMatchObject({ available: '70.00', frozen: '30.00' });
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data).toMatchObject({
      status: 'fulfilled',
      transaction_id: bought[0]!.id,
    });
  });
});
