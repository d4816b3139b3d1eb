import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';
import { roundTripMeter } from '../helpers/round-trips.ts';

/**
 * A create under an Idempotency-Key costs two round trips to the database: the claim's statement,
 * which also reads the capability and the buyer's last purchase of it (engine/money/ceilings.ts
 * purchaseRead: the repeat-buyer ceiling needs it), then the change's statement
 * (docs/decisions/money-and-escrow.md "Price ceilings"). A purchase the ceiling refuses reads nothing
 * more: its claim is let go (a retry may run it again). Measured from outside the engine
 * (helpers/round-trips.ts).
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
  it('costs two round trips: a first one, a repeat one under the ceiling, and one with max_price', async () => {
    const { buyer, capability } = await agentMarket(test);
    const body = { capability_id: capability.id };
    // A caller's first request also loads who it is; the count starts after it.
    await test.http.get('/api/v1/wallet/').set(buyer.headers).expect(200);
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, body, 201))).toBe(2);
    // Bought before: the ceiling is the price paid then, read in the claim's statement.
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, body, 201))).toBe(2);
    expect(await meter.roundTrips((mark) => create({ ...buyer.headers, ...mark }, { ...body, max_price: '10.00' }, 201))).toBe(2);
  });

  it('that the ceiling refuses costs two round trips, its claim and the claim let go, and buys nothing', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await create(buyer.headers, { capability_id: capability.id }, 201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '20.00' }).expect(200);
    let refusal: { body: { code: number } } | undefined;
    expect(await meter.roundTrips(async (mark) => (refusal = await create({ ...buyer.headers, ...mark }, { capability_id: capability.id }, 409)))).toBe(2);
    expect(refusal!.body.code).toBe(4093);
    const mine = (await test.http.get('/api/v1/transactions?role=buyer').set(buyer.headers).expect(200)).body.data;
    expect(mine.items).toHaveLength(1);
  });
});
