import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';

/**
 * What a request's rate-limit buckets cost in Redis round trips, counted as the writes the shared
 * connection makes to its socket while one request is admitted. A write's buckets (exact) cost one
 * round trip together (issue 15 point 10), not one each; a read's and a stream open's (reconciled,
 * issue 30 point 2) none on the request's way: the tokens reach Redis afterwards, every key in one write. Needs
 * Redis, which the run on real backends (CI) has.
 */
/** The principal an agent's API-key credentials resolve to, for admission called directly. */
const principalOf = (agent: Awaited<ReturnType<typeof createAgent>>) => ({
  user_id: agent.userId,
  caller_type: 'agent' as const,
  platform: null,
  api_key_id: agent.apiKeyId,
});

describe.runIf(usingRealBackends() && Boolean(process.env.TEST_REDIS_URL))('rate limits on Redis', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp();
  });
  afterAll(() => test.close());

  async function writesDuring(work: () => Promise<unknown>): Promise<number> {
    const redis = test.runtime.bus.shared!.redis;
    const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write.bind(stream);
    let writes = 0;
    stream.write = (...args: unknown[]) => {
      writes += 1;
      return write(...args);
    };
    try {
      await work();
    } finally {
      stream.write = write;
    }
    return writes;
  }

  it("takes an agent write's two buckets (credential and API key) in one round trip", async () => {
    const agent = await createAgent(test);
    await test.http.get('/api/v1/wallet/transactions').set(agent.headers).expect(200);
    const principal = principalOf(agent);
    const writes = await writesDuring(() =>
      test.runtime.engine.admission.consume(['writesPerCredential', 'writesPerApiKey'], { address: '127.0.0.1', principal }),
    );
    expect(writes).toBe(1);
  });

  it("takes an agent read's two buckets without a round trip, and tells Redis of both in one write afterwards", async () => {
    const agent = await createAgent(test);
    const principal = principalOf(agent);
    const { admission } = test.runtime.engine;
    await admission.reconcile();
    const read = () => admission.consume(['readsPerCredential', 'readsPerApiKey'], { address: '127.0.0.1', principal });
    expect(await writesDuring(read)).toBe(0);
    expect(await writesDuring(read)).toBe(0);
    expect(await writesDuring(() => admission.reconcile())).toBe(1);
    const keyPrefix = test.runtime.bus.shared!.keyPrefix;
    const redis = test.runtime.bus.shared!.redis;
    expect(await redis.get(`${keyPrefix}rate:readsPerCredential:key:${agent.apiKeyId}:${agent.userId}`)).toBe('2');
    expect(await redis.get(`${keyPrefix}rate:readsPerApiKey:api-key:${agent.apiKeyId}`)).toBe('2');
  });

  it("takes a stream open's two buckets without a round trip, and tells Redis of both in one write afterwards", async () => {
    const agent = await createAgent(test);
    const principal = principalOf(agent);
    const { admission } = test.runtime.engine;
    await admission.reconcile();
    const open = () => admission.consume(['streamOpensPerCredential', 'streamOpensPerApiKey'], { address: '127.0.0.1', principal });
    expect(await writesDuring(open)).toBe(0);
    expect(await writesDuring(() => admission.reconcile())).toBe(1);
    const keyPrefix = test.runtime.bus.shared!.keyPrefix;
    const redis = test.runtime.bus.shared!.redis;
    expect(await redis.get(`${keyPrefix}rate:streamOpensPerCredential:key:${agent.apiKeyId}:${agent.userId}`)).toBe('1');
    expect(await redis.get(`${keyPrefix}rate:streamOpensPerApiKey:api-key:${agent.apiKeyId}`)).toBe('1');
  });

  it("takes an ai-create draft's two buckets (exact: each may be a paid model call) in one round trip", async () => {
    const agent = await createAgent(test);
    const principal = principalOf(agent);
    const draft = () => test.runtime.engine.admission.consume(['aiDraftsPerCredential', 'aiDraftsPerApiKey'], { address: '127.0.0.1', principal });
    expect(await writesDuring(draft)).toBe(1);
    const keyPrefix = test.runtime.bus.shared!.keyPrefix;
    expect(await test.runtime.bus.shared!.redis.get(`${keyPrefix}rate:aiDraftsPerCredential:key:${agent.apiKeyId}:${agent.userId}`)).toBe('1');
  });
});
