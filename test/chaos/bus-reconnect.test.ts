import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp, withBrokenBus } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { type RunningProcess, startRedis, startRedisOnFreePort } from '../helpers/processes.ts';
import { listen, openEventSource } from '../helpers/server.ts';

/**
 * Pub/sub keeps nothing: what is published while an instance's subscription connection is down
 * never reaches it. When the connection comes back, every subscriber catches up from the outbox,
 * so even the last event of a stream (with nothing after it to reveal the gap) arrives.
 */
let redisPort: number;
let redis: RunningProcess;
let test: TestApp;
beforeAll(async () => {
  ({ redis, port: redisPort } = await startRedisOnFreePort());
  test = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${redisPort}` });
}, 60_000);
afterAll(async () => {
  await test?.close();
  await redis?.stop();
});

it('delivers an event lost on the bus once the bus connection is back', { timeout: 60_000 }, async () => {
  const server = await listen(test);
  try {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    const client = openEventSource(`${server.url}/api/v1/transactions/${id}/events`, seller.headers);
    await client.opened;
    await expect.poll(() => client.received.length).toBe(2);

    // The last change is lost on the bus, as if sent while this instance was cut off.
    await withBrokenBus(test, 'lose', () => act(test, seller, id, 'accept').expect(200));
    await redis.stop();
    redis = await startRedis(redisPort);
    await expect.poll(() => client.received.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    client.close();
    expect(client.received.map((event) => event.id)).toEqual(['1', '2', '3']);
    expect(client.received.at(-1)!.data.data.transaction.status).toBe('accepted');
  } finally {
    await server.close();
  }
});
