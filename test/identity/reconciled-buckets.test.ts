import { randomBytes, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createApp } from '../../src/app.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { createReconciler } from '../../src/engine/identity/index.ts';
import { createRedisBus, type EventBus } from '../../src/events/bus.ts';
import { limits } from '../../src/limits.ts';
import { createApiKey } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Reconciled rate-limit buckets (reads and JSON-RPC calls; docs/decisions/limits-and-storage.md
 * "Reconciled buckets"): taken in memory, told to Redis afterwards. One instance counts exactly;
 * instances sharing Redis count together once they reconcile, and before that each admits at
 * most its share of the limit on its own. Time is a clock the test moves.
 */
const sharedRedis = process.env.TEST_REDIS_URL;
const connections: Redis[] = [];
afterAll(() => connections.forEach((redis) => redis.disconnect()));

function clock() {
  let at = 1_000_000;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

/** One instance's bucket of `points` per minute; on Redis when the run has one, under a prefix of the test's own. */
async function instance(prefix: string, points: number, time: { now(): number }, redis: Redis | null) {
  const reconciler = createReconciler({ redis, onFailure: () => {}, now: time.now });
  const bucket = reconciler.bucket(`${prefix}rate:readsPerCredential`, points, 60);
  const take = (key: string) => {
    if (bucket.refusedForMs(key, 1) !== null) return false;
    bucket.take(key, 1);
    return true;
  };
  return { bucket, reconciler, take };
}

async function redisConnection(): Promise<Redis> {
  const redis = new Redis(sharedRedis!);
  connections.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

describe('one instance', () => {
  it('admits exactly the limit in a window, says how long until it ends, and admits again in the next', async () => {
    const time = clock();
    const { bucket, take } = await instance('', 5, time, null);
    const answers = Array.from({ length: 7 }, () => take('user:a'));
    expect(answers).toEqual([true, true, true, true, true, false, false]);
    time.advance(20_000);
    expect(bucket.refusedForMs('user:a', 1)).toBe(40_000);
    // Another key has a bucket of its own.
    expect(take('user:b')).toBe(true);
    time.advance(40_000);
    expect(take('user:a')).toBe(true);
  });

  it('refuses a batch larger than what is left, and gives back what a refused request took', async () => {
    const { bucket, take } = await instance('', 5, clock(), null);
    expect(take('k')).toBe(true);
    expect(bucket.refusedForMs('k', 5)).not.toBeNull();
    expect(bucket.refusedForMs('k', 4)).toBeNull();
    bucket.take('k', 4);
    bucket.giveBack('k', 4);
    expect(bucket.refusedForMs('k', 4)).toBeNull();
  });
});

describe.runIf(Boolean(sharedRedis))('instances sharing Redis', () => {
  it('count together once they reconcile: what A took, B refuses', async () => {
    const prefix = `test:${randomBytes(4).toString('hex')}:`;
    const time = clock();
    const [a, b] = [await instance(prefix, 100, time, await redisConnection()), await instance(prefix, 100, time, await redisConnection())];
    for (let index = 0; index < 5; index++) expect(a.take('k')).toBe(true);
    await a.reconciler.reconcileAll();
    expect(b.take('k')).toBe(true);
    await b.reconciler.reconcileAll();
    // B now knows the 6 taken of 100 and A learns of B's at its next reconciliation.
    for (let index = 0; index < 94; index++) expect(b.take('k')).toBe(true);
    await b.reconciler.reconcileAll();
    expect(b.take('k')).toBe(false);
    expect(a.take('k')).toBe(true);
    await a.reconciler.reconcileAll();
    expect(a.take('k')).toBe(false);
    expect(Number(await (await redisConnection()).get(`${prefix}rate:readsPerCredential:k`))).toBe(101);
  });

  it('admit at most their share of the limit alone: past it a request waits for the others to be heard', async () => {
    const prefix = `test:${randomBytes(4).toString('hex')}:`;
    const time = clock();
    const points = 200;
    const share = Math.max(1, Math.floor(points * limits.rateLimitUnreconciledShareMax));
    const [a, b] = [await instance(prefix, points, time, await redisConnection()), await instance(prefix, points, time, await redisConnection())];
    // A takes the whole limit, reconciling whenever it must, as admission.consume does.
    let admittedByA = 0;
    for (let index = 0; index < points + 10; index++) {
      if (a.bucket.mustReconcile('k', 1)) await a.bucket.reconcile('k');
      if (a.take('k')) admittedByA += 1;
    }
    expect(admittedByA).toBe(points);
    await a.reconciler.reconcileAll();
    // B has heard nothing yet: it admits its share, then must hear the others, and then refuses.
    let admittedByB = 0;
    for (let index = 0; index < points; index++) {
      if (b.bucket.mustReconcile('k', 1)) await b.bucket.reconcile('k');
      if (b.take('k')) admittedByB += 1;
    }
    expect(admittedByB).toBe(share);
  });

  it('go on counting alone while Redis does not answer', async () => {
    const redis = await redisConnection();
    const time = clock();
    const a = await instance(`test:${randomBytes(4).toString('hex')}:`, 3, time, redis);
    redis.disconnect();
    expect(Array.from({ length: 4 }, () => a.take('k'))).toEqual([true, true, true, false]);
    await a.reconciler.reconcileAll();
  });
});

describe.runIf(Boolean(sharedRedis))('two server instances sharing Redis', () => {
  let test: TestApp | undefined;
  let otherBus: EventBus | undefined;
  let other: Engine | undefined;
  afterEach(async () => {
    await other?.close();
    await otherBus?.close();
    await test?.close();
  });

  it("count an API key's reads made through A and B in one bucket, refused on both once spent", async () => {
    test = await startTestApp({ RATE_LIMIT_READS_PER_API_KEY: '6/60' });
    const dependencies = test.runtime.engine.dependencies;
    otherBus = createRedisBus(sharedRedis!, dependencies.bus.shared!.keyPrefix);
    other = await createEngine({ ...dependencies, bus: otherBus });
    const otherHttp = supertest(createApp(other));
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const headers = () => ({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() });
    const statuses = [];
    for (let index = 0; index < 3; index++) statuses.push((await test.http.get('/api/v1/transactions').set(headers())).status);
    for (let index = 0; index < 3; index++) statuses.push((await otherHttp.get('/api/v1/transactions').set(headers())).status);
    // Both tell Redis what they took, then each hears the other's.
    for (let round = 0; round < 2; round++) await Promise.all([test.runtime.engine.admission.reconcile(), other.admission.reconcile()]);
    statuses.push((await test.http.get('/api/v1/transactions').set(headers())).status);
    statuses.push((await otherHttp.get('/api/v1/transactions').set(headers())).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  });
});
