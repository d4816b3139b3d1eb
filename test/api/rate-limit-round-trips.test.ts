import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';

/**
 * A request's rate-limit buckets cost one Redis round trip together (issue 15 point 10), not one
 * each: counted as the writes the shared connection makes to its socket while one request is
 * admitted. Needs Redis, which the run on real backends (CI) has.
 */
describe.runIf(usingRealBackends() && Boolean(process.env.TEST_REDIS_URL))('rate limits on Redis', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp();
  });
  afterAll(() => test.close());

  it("takes an agent read's two buckets (credential and API key) in one round trip", async () => {
    const agent = await createAgent(test);
    await test.http.get('/api/v1/wallet/transactions').set(agent.headers).expect(200);
    const redis = test.runtime.bus.shared!.redis;
    const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write.bind(stream);
    let writes = 0;
    stream.write = (...args: unknown[]) => {
      writes += 1;
      return write(...args);
    };
    try {
      await test.runtime.engine.admission.consume(['readsPerCredential', 'readsPerApiKey'], {
        address: '127.0.0.1',
        principal: { user_id: agent.userId, caller_type: 'agent', platform: null, api_key_id: agent.apiKeyId },
      });
    } finally {
      stream.write = write;
    }
    expect(writes).toBe(1);
  });
});
