import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createEngine } from '../../src/engine/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';
import { roundTripMeter } from '../helpers/round-trips.ts';

/**
 * A first create under an Idempotency-Key costs two round trips to the database: the claim's
 * statement, which also reads the capability and the buyer's last purchase of it
 * (engine/money/ceilings.ts purchaseRead: the repeat-buyer ceiling needs it), then the change's
 * statement (docs/decisions/money-and-escrow.md "Price ceilings"). A repeat purchase decides on
 * the instance's copy of that read and costs one: its change statement checks the copy and claims
 * the key itself (a fresh claim, engine/money/idempotency.ts). A copy gone stale costs that
 * statement, which writes nothing, and then the two of a first purchase. A purchase the ceiling
 * refuses reads nothing more: its claim is let go (a retry may run it again). Measured from
 * outside the engine (helpers/round-trips.ts).
 */
let test: TestApp;
let meter: ReturnType<typeof roundTripMeter>;
beforeAll(async () => {
  test = await startTestApp();
  meter = roundTripMeter(test);
});
afterAll(() => test.close());

const create = (headers: Record<string, string>, body: Record<string, unknown>, expected: number) =>
  meter.http
    .post('/api/v1/transactions')
    .set({ ...headers, 'Idempotency-Key': randomUUID() })
    .send(body)
    .expect(expected);

describe('a purchase', () => {
  it('costs two round trips the first time, then one, with or without max_price', async () => {
    const { buyer, capability } = await agentMarket(test);
    const body = { capability_id: capability.id };
    // A caller's first request also loads who it is; the count starts after it.
    await test.http.get('/api/v1/wallet/').set(buyer.headers).expect(200);
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, body, 201))).toBe(2);
    // Bought before: the ceiling is the price paid then, which the instance's copy of the read holds.
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, body, 201))).toBe(1);
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, { ...body, max_price: '10.00' }, 201))).toBe(1);
  });

  it('after a price change costs the statement that finds its copy stale, then the regular two', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await create(buyer.headers, { capability_id: capability.id }, 201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '5.00' }).expect(200);
    let bought: { body: { data: { price_ut: string } } } | undefined;
    expect(await meter.roundTrips(async (mark) => (bought = await create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 201)))).toBe(3);
    expect(bought!.body.data.price_ut).toBe('5.00');
    // The copy is the new read now.
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 201))).toBe(1);
  });

  it('after a purchase on another instance costs the stale statement too: the last purchase is not the one the copy holds', async () => {
    const { buyer, capability } = await agentMarket(test);
    const other = await createEngine(test.runtime.engine.dependencies);
    try {
      await create(buyer.headers, { capability_id: capability.id }, 201);
      await supertest(createApp(other))
        .post('/api/v1/transactions')
        .set({ ...buyer.headers, 'Idempotency-Key': randomUUID() })
        .send({ capability_id: capability.id })
        .expect(201);
      // The capability is as this instance read it; only the buyer's last purchase changed.
      expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 201))).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('that the ceiling refuses costs the stale statement, its claim and the claim let go, and buys nothing', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await create(buyer.headers, { capability_id: capability.id }, 201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '20.00' }).expect(200);
    let refusal: { body: { code: number } } | undefined;
    expect(await meter.roundTrips(async (mark) => (refusal = await create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 409)))).toBe(3);
    expect(refusal!.body.code).toBe(4093);
    // The stale copy was dropped: refused again, the purchase makes its claim and lets it go.
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 409))).toBe(2);
    const mine = (await test.http.get('/api/v1/transactions?role=buyer').set(buyer.headers).expect(200)).body.data;
    expect(mine.items).toHaveLength(1);
  });
});
