import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import type { Actor } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { agentMarket, balance, credit } from '../helpers/market.ts';

/**
 * A capability's rate_limit_per_min and daily_limit bound its invokes and purchases together,
 * across all buyers and all server instances (decisions section 6). Two instances (two engines and
 * two HTTP apps) share one database, and on the real backends one Redis, as behind a load
 * balancer. CALLBACK_ALLOW_PRIVATE=true lets the callbacks reach the loopback server.
 */
let test: TestApp;
let other: Engine;
let instances: ReturnType<typeof supertest>[];
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;

beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  other = await createEngine(test.runtime.engine.dependencies);
  instances = [test.http, supertest(createApp(other))];
});
afterAll(async () => {
  await other?.close();
  await test?.close();
  await callbacks?.close();
});

const invokeOn = (instance: number, buyer: Actor, capabilityId: string) =>
  instances[instance % 2]!.post(`/api/v1/capabilities/${capabilityId}/invoke`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ input: {} });
const buyOn = (instance: number, buyer: Actor, capabilityId: string) =>
  instances[instance % 2]!.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capabilityId });

const secondsToUtcMidnight = (at: Date) => Math.ceil((Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1) - at.getTime()) / 1000);

describe('capability limits across two instances', () => {
  it(raceTest('daily_limit 3: of 8 parallel invokes by two buyers on two instances exactly 3 succeed; the others are 4291 and cost nothing'), async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00', {
      pricing_model: 'per_query',
      price_ut: '2.00',
      callback_url: callbacks.url('/ok'),
      daily_limit: 3,
    });
    const secondBuyer = (await agentMarket(test, '100.00')).buyer;
    const responses = await Promise.all(Array.from({ length: 8 }, (_unused, index) => invokeOn(index, index % 4 < 2 ? buyer : secondBuyer, capability.id)));
    const succeeded = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status === 429);
    expect(succeeded).toHaveLength(3);
    expect(refused).toHaveLength(5);
    for (const response of refused) {
      expect(response.body).toMatchObject({ code: 4291, message: 'daily_limit_reached' });
      const retryAfter = Number(response.headers['retry-after']);
      expect(retryAfter).toBe(response.body.data.retry_after_seconds);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(secondsToUtcMidnight(test.runtime.engine.dependencies.now()) + 1);
    }
    const [first, second] = [await balance(test, buyer), await balance(test, secondBuyer)];
    expect(Number(first.available) + Number(second.available)).toBe(200 - 3 * 2);
    expect(first.frozen).toBe('0.00');
    expect(second.frozen).toBe('0.00');
    expect(await balance(test, seller)).toMatchObject({ available: '6.00' });
    // Purchases count against the same limit: the day is used up for them too.
    const purchase = await buyOn(1, buyer, capability.id);
    expect(purchase.body).toMatchObject({ code: 4291 });

    // The next UTC day the capability may be invoked again.
    test.clock.advanceMs(secondsToUtcMidnight(test.runtime.engine.dependencies.now()) * 1000 + 1000);
    expect((await invokeOn(1, buyer, capability.id)).status).toBe(200);
  });

  it(raceTest('rate_limit_per_min 2 bounds purchases on both instances (4290, Retry-After within the minute)'), async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { rate_limit_per_min: 2 });
    // Start the burst just after a minute begins, so that it cannot straddle two windows.
    test.clock.advanceMs(60_000 - (test.runtime.engine.dependencies.now().getTime() % 60_000) + 200);
    const responses = await Promise.all(Array.from({ length: 6 }, (_unused, index) => buyOn(index, buyer, capability.id)));
    expect(responses.filter((response) => response.status === 201)).toHaveLength(2);
    const refused = responses.filter((response) => response.status === 429);
    expect(refused).toHaveLength(4);
    for (const response of refused) {
      expect(response.body.code).toBe(4290);
      expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    test.clock.advanceMs(61_000);
    expect((await buyOn(0, buyer, capability.id)).status).toBe(201);
  });

  it('an attempt refused for its balance does not use up the limit', async () => {
    const { buyer, capability } = await agentMarket(test, '1.00', {
      pricing_model: 'per_query',
      price_ut: '2.00',
      callback_url: callbacks.url('/ok'),
      daily_limit: 1,
    });
    expect((await invokeOn(0, buyer, capability.id)).body).toMatchObject({ code: 4020 });
    expect((await invokeOn(1, buyer, capability.id)).body).toMatchObject({ code: 4020 });
    await credit(test, buyer.userId, '5.00');
    expect((await invokeOn(0, buyer, capability.id)).status).toBe(200);
    expect((await invokeOn(1, buyer, capability.id)).body).toMatchObject({ code: 4291 });
    expect(await balance(test, buyer)).toMatchObject({ available: '4.00', frozen: '0.00' });
  });

  it('a purchase given up before it was paid gives its unit of the day back, on either instance; a paid one, or one the limit never counted, gives back nothing', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const cancelOn = (instance: number, id: string) =>
      instances[instance % 2]!.post(`/api/v1/transactions/${id}/cancel`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send({});
    // Bought before the seller set a daily limit: the limit never counted it.
    const uncounted = (await buyOn(0, buyer, capability.id).expect(201)).body.data.id as string;
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ daily_limit: 2 }).expect(200);
    const first = (await buyOn(0, buyer, capability.id).expect(201)).body.data.id as string;
    await buyOn(1, buyer, capability.id).expect(201);
    expect((await buyOn(0, buyer, capability.id)).body.code).toBe(4291);
    await cancelOn(0, uncounted).expect(200);
    expect((await buyOn(1, buyer, capability.id)).body.code).toBe(4291);
    // Given up unpaid, on the other instance: its unit is free again, for this buyer or anyone.
    await cancelOn(1, first).expect(200);
    const again = (await buyOn(0, buyer, capability.id).expect(201)).body.data.id as string;
    expect((await buyOn(1, buyer, capability.id)).body.code).toBe(4291);
    // Paid, then cancelled: the unit stays used.
    await instances[1]!.post(`/api/v1/transactions/${again}/freeze`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send({}).expect(200);
    await cancelOn(0, again).expect(200);
    expect((await buyOn(0, buyer, capability.id)).body.code).toBe(4291);
  });

  it("gives an unpaid purchase's unit back once, however often its cancel is replayed or raced", async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { daily_limit: 2 });
    const bought = (await buyOn(0, buyer, capability.id).expect(201)).body.data.id as string;
    await buyOn(1, buyer, capability.id).expect(201);
    const key = randomUUID();
    const cancels = await Promise.all(
      [0, 1, 0, 1].map((instance, index) =>
        instances[instance]!.post(`/api/v1/transactions/${bought}/cancel`)
          .set(buyer.headers)
          .set('Idempotency-Key', index < 2 ? key : randomUUID())
          .send({}),
      ),
    );
    expect(cancels.filter((answer) => answer.status === 200).length).toBeGreaterThanOrEqual(1);
    // One unit came back: one more purchase fits the day, the next does not.
    await buyOn(0, buyer, capability.id).expect(201);
    expect((await buyOn(1, buyer, capability.id)).body.code).toBe(4291);
  });
});
