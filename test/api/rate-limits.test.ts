import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { limits } from '../../src/limits.ts';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Rate limits as a client meets them: 4290 with Retry-After once a bucket is empty, while other
 * addresses, accounts and credentials carry on. Counts are bounded; nothing here measures time
 * (bench/login measures what the limits do to latency under attack).
 */
const opened: TestApp[] = [];
async function app(environment: Record<string, string> = {}) {
  const test = await startTestApp(environment);
  opened.push(test);
  return test;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((test) => test.close()));
});

const countCodes = (responses: { body: { code: number } }[]) =>
  responses.reduce<Record<number, number>>((counts, response) => ({ ...counts, [response.body.code]: (counts[response.body.code] ?? 0) + 1 }), {});

/** Sends one after another until the first 4290; the number of answers before it. */
async function answeredBeforeRefusal(send: () => Promise<{ body: { code: number } }>, max = 100) {
  for (let count = 0; count < max; count++) if ((await send()).body.code === 4290) return count;
  return max;
}

/** Opens the caller's transaction stream and hangs up at once; its HTTP status. */
const openStream = async (test: TestApp, headers: Record<string, string>) =>
  (
    await test.http
      .get('/api/v1/transactions/events')
      .set(headers)
      .timeout({ response: 5_000 })
      .ok(() => true)
      .buffer(false)
      .parse((stream, done) => {
        (stream as unknown as { destroy(): void }).destroy();
        done(null, null);
      })
      .catch((error: { response?: { status: number } }) => error.response ?? { status: 0 })
  ).status;

describe('login', () => {
  const login = (test: TestApp, address: string, email: string, password: string) =>
    test.http.post('/api/v1/auth/login').set('X-Forwarded-For', address).send({ email, password });

  it('checks at most the per-account-and-address failures from one address, even in parallel, and the owner still signs in from another', async () => {
    const test = await app({ TRUST_PROXY: 'true' });
    const victim = await signUpHuman(test);
    const allowed = limits.rateLimits.loginFailuresPerAccountAndAddress.requests;
    const attempts = await Promise.all(Array.from({ length: 100 }, () => login(test, '203.0.113.1', victim.email, 'wrong-password-1')));
    const counts = countCodes(attempts);
    // Each checking attempt holds a token, so parallel attempts never check more than the bucket allows.
    expect(counts[4010]).toBeLessThanOrEqual(allowed);
    expect((counts[4010] ?? 0) + (counts[4290] ?? 0)).toBe(100);
    const refused = attempts.find((response) => response.body.code === 4290)!;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.body.data.retry_after_seconds).toBe(Number(refused.headers['retry-after']));
    // Refused attempts left no count behind: the bucket is spent by exactly `allowed` wrong passwords.
    const more = await answeredBeforeRefusal(() => login(test, '203.0.113.1', victim.email, 'wrong-password-1'));
    expect((counts[4010] ?? 0) + more).toBe(allowed);

    expect((await login(test, '198.51.100.7', victim.email, victim.password)).body.code).toBe(0);
  });

  it('counts only wrong passwords: a success clears the account, a refusal counts nothing', async () => {
    const test = await app({ TRUST_PROXY: 'true', RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS: '3/300', RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS: '9/300' });
    const user = await signUpHuman(test);
    const other = await signUpHuman(test);
    const codes = [];
    for (const password of [
      'wrong-1-pass',
      'wrong-2-pass',
      user.password,
      'wrong-3-pass',
      'wrong-4-pass',
      user.password,
      'wrong-5-pass',
      'wrong-6-pass',
      'wrong-7-pass',
      'wrong-8-pass',
      'wrong-9-pass',
      user.password,
    ]) {
      codes.push((await login(test, '203.0.113.2', user.email, password)).body.code);
    }
    // Three failures in a row spend the bucket; from then on even the right password waits.
    expect(codes).toEqual([4010, 4010, 0, 4010, 4010, 0, 4010, 4010, 4010, 4290, 4290, 4290]);
    // The address holds its 7 wrong passwords, not the successes or the refusals: 2 more of its 9 remain.
    expect(await answeredBeforeRefusal(() => login(test, '203.0.113.2', other.email, 'wrong-password-1'))).toBe(2);
  });

  it('refuses every address once the looser account-wide bucket is spent from many addresses', async () => {
    const test = await app({ TRUST_PROXY: 'true', RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: '5/300' });
    const victim = await signUpHuman(test);
    const codes = [];
    for (let index = 0; index < 6; index++) codes.push((await login(test, `203.0.113.${10 + index}`, victim.email, 'wrong-password-1')).body.code);
    expect(codes).toEqual([4010, 4010, 4010, 4010, 4010, 4290]);
    expect((await login(test, '198.51.100.7', victim.email, victim.password)).body.code).toBe(4290);
  });

  it('refuses one address trying many accounts beyond the per-address failures, and not another address', async () => {
    const test = await app({ TRUST_PROXY: 'true' });
    const user = await signUpHuman(test);
    const allowed = limits.rateLimits.loginFailuresPerAddress.requests;
    const attempts = await Promise.all(
      Array.from({ length: allowed + 5 }, (_, index) => login(test, '203.0.113.9', `nobody-${index}@example.com`, 'wrong-password-1')),
    );
    const checked = countCodes(attempts)[4010] ?? 0;
    expect(checked).toBeLessThanOrEqual(allowed);
    expect(checked + (await answeredBeforeRefusal(() => login(test, '203.0.113.9', 'nobody-else@example.com', 'wrong-password-1')))).toBe(allowed);
    expect((await login(test, '203.0.113.10', user.email, user.password)).body.code).toBe(0);
  });
  it('refuses a flood spread over many addresses and accounts once the password-hash queue is full, then signs in again', async () => {
    const test = await app({ TRUST_PROXY: 'true' });
    const user = await signUpHuman(test);
    const attempts = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        test.http
          .post('/api/v1/auth/login')
          .set('X-Forwarded-For', `10.0.${index >> 8}.${index & 255}`)
          .send({ email: `nobody-${index}@example.com`, password: 'wrong-password-1' }),
      ),
    );
    const counts = countCodes(attempts);
    // At most the running and queued hashes are answered 4010 while the flood lasts; the rest are refused at once.
    expect(counts[4290]).toBeGreaterThan(0);
    expect(counts[4010]! + counts[4290]!).toBe(200);
    expect(attempts.find((response) => response.body.code === 4290)!.headers['retry-after']).toBe('1');
    const real = await test.http.post('/api/v1/auth/login').set('X-Forwarded-For', '198.51.100.7').send({ email: user.email, password: user.password });
    expect(real.body.code).toBe(0);
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY says a proxy sets it', async () => {
    const test = await app({ RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS: '3/60' });
    const statuses = [];
    for (let index = 0; index < 4; index++) {
      const response = await test.http
        .post('/api/v1/auth/login')
        .set('X-Forwarded-For', `192.0.2.${index}`)
        .send({ email: `x${index}@example.com`, password: 'wrong-password-1' });
      statuses.push(response.body.code);
    }
    expect(statuses).toEqual([4010, 4010, 4010, 4290]);
  });
});

describe('signup', () => {
  it('stops answering whether an email has an account once the per-address limit is spent', async () => {
    const test = await app({
      RATE_LIMIT_SIGNUP_PER_ADDRESS: `${limits.rateLimits.signupPerAddress.requests}/${limits.rateLimits.signupPerAddress.windowSeconds}`,
    });
    const existing = await signUpHuman(test);
    const probes = [];
    for (let index = 0; index < limits.rateLimits.signupPerAddress.requests + 3; index++) {
      probes.push(await test.http.post('/api/v1/auth/signup').send({ email: existing.email, password: 'some-password-1' }));
    }
    // The signup that made the account took one token; the probes after the last one learn nothing.
    expect(countCodes(probes)).toEqual({ 4092: limits.rateLimits.signupPerAddress.requests - 1, 4290: 4 });
    expect(probes.at(-1)!.status).toBe(429);
  });
});

describe('reads, writes and configuration', () => {
  it('limits a credential by its own bucket, configured by RATE_LIMIT_READS_PER_CREDENTIAL', async () => {
    const test = await app({ RATE_LIMIT_READS_PER_CREDENTIAL: '5/60' });
    const [busy, quiet] = [await createAgent(test), await createAgent(test)];
    const answers = [];
    for (let index = 0; index < 7; index++) answers.push(await test.http.get('/api/v1/transactions').set(busy.headers));
    expect(answers.map((response) => response.status)).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(answers[5]!.body).toMatchObject({ code: 4290, message: 'rate_limited' });
    expect(Number(answers[5]!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Every GET route takes from the same bucket: the capability list too.
    expect((await test.http.get('/api/v1/capabilities').set(busy.headers)).body.code).toBe(4290);
    // Writes have a bucket of their own, and other credentials are untouched.
    await test.http.get('/api/v1/wallet/stats').set(quiet.headers).expect(200);
    const write = await test.http.post('/api/v1/capabilities').set(busy.headers).send({
      title: 'Echo',
      description: 'Echoes',
      category: 'data',
      capability_type: 'tool',
      pricing_model: 'per_use',
      price_ut: '1.00',
      callback_url: 'https://seller.example/callback',
    });
    expect(write.status).toBe(201);
  });

  it('turns a bucket off with "off" and refuses a malformed setting at start', async () => {
    const test = await app({
      RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: 'off',
      RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS: 'off',
      RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS: 'off',
    });
    const user = await signUpHuman(test);
    const attempts = [];
    for (let index = 0; index < 40; index++)
      attempts.push(await test.http.post('/api/v1/auth/login').send({ email: user.email, password: 'wrong-password-1' }));
    expect(countCodes(attempts)).toEqual({ 4010: 40 });
    expect(() => loadConfig({ RATE_LIMIT_WRITES_PER_CREDENTIAL: '10 per minute', DATA_DIR: '/tmp' })).toThrow(/RATE_LIMIT_WRITES_PER_CREDENTIAL/);
  });

  it('documents 4290 on limited routes in the OpenAPI document, and not on health probes', async () => {
    const test = await app();
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const codesOf = (path: string, method: string) =>
      Object.keys(document.paths[path][method].responses).join(' ') + JSON.stringify(document.paths[path][method].responses);
    expect(codesOf('/api/v1/auth/login', 'post')).toContain('4290');
    expect(codesOf('/api/v1/transactions', 'get')).toContain('4290');
    expect(codesOf('/api/v1/rpc', 'post')).toContain('4290');
    expect(codesOf('/healthz', 'get')).not.toContain('4290');
  });
});

describe('Redis outage', () => {
  // Only with Redis (as in CI): the embedded default counts in process and has no Redis to lose.
  it.runIf(Boolean(process.env.TEST_REDIS_URL))('keeps answering and keeps limiting, per instance, while Redis is unreachable', async () => {
    const test = await app({ RATE_LIMIT_READS_PER_CREDENTIAL: '3/60' });
    const agent = await createAgent(test);
    test.runtime.bus.shared!.redis.disconnect();
    const statuses = [];
    for (let index = 0; index < 4; index++) statuses.push((await test.http.get('/api/v1/transactions').set(agent.headers)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

describe('JSON-RPC over HTTP', () => {
  it('counts each call of a batch and answers HTTP 429 with the JSON-RPC error over the limit', async () => {
    const test = await app({ RATE_LIMIT_RPC_CALLS_PER_CREDENTIAL: '5/60' });
    const agent = await createAgent(test);
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: '00000000-0000-4000-8000-000000000000' } });
    const first = await test.http
      .post('/api/v1/rpc')
      .set(agent.headers)
      .send([call(1), call(2), call(3), call(4)]);
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(4);
    const second = await test.http
      .post('/api/v1/rpc')
      .set(agent.headers)
      .send([call(5), call(6)]);
    expect(second.status).toBe(429);
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(second.body.error).toMatchObject({ code: -32129, data: { code: 4290 } });
    const over = await test.http.post('/api/v1/rpc').set(agent.headers).send(call(7));
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ id: 7, error: { data: { code: 4290 } } });
  });
});

describe('the buckets of one API key, shared by all its users', () => {
  /** Users of one auto-provisioning key, each with credentials of its own. */
  async function usersOfOneKey(test: TestApp, count: number) {
    const key = await test.http
      .post('/api/v1/admin/api-keys')
      .set('X-Admin-Token', 'test-admin-token-0123456789abcdef')
      .send({ agent_platform_type: 'custom_mcp', auto_provision: true })
      .expect(201);
    return Array.from({ length: count }, () => ({ 'X-Api-Key': key.body.data.api_key as string, 'X-Platform-User-Id': randomUUID() }));
  }

  it('refuses the writes of a key beyond writesPerApiKey, though no user of it is near its own limit', async () => {
    const test = await app({ RATE_LIMIT_WRITES_PER_API_KEY: '4/60' });
    const users = await usersOfOneKey(test, 3);
    const answers = [];
    for (let round = 0; round < 2; round++) {
      for (const headers of users)
        answers.push(await test.http.post('/api/v1/demands').set(headers).send({ description: 'Translate a contract into Chinese' }));
    }
    expect(answers.map((answer) => answer.body.code)).toEqual([0, 0, 0, 0, 4290, 4290]);
    expect(Number(answers[4]!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another key's users are not affected.
    const [other] = await usersOfOneKey(test, 1);
    expect((await test.http.post('/api/v1/demands').set(other!).send({ description: 'Design a logo' })).body.code).toBe(0);
  });

  it('refuses the stream opens of a key beyond streamOpensPerApiKey, though each user opened one', async () => {
    const test = await app({ RATE_LIMIT_STREAM_OPENS_PER_API_KEY: '2/60' });
    const users = await usersOfOneKey(test, 3);
    const codes: number[] = [];
    for (const headers of users) {
      codes.push(await openStream(test, headers));
    }
    expect(codes).toEqual([200, 200, 429]);
  });
});

describe('ai-create drafts', () => {
  it('count in buckets of their own (each may be a paid model call), apart from stream opens', async () => {
    const test = await app({ RATE_LIMIT_AI_DRAFTS_PER_CREDENTIAL: '1/60', RATE_LIMIT_STREAM_OPENS_PER_CREDENTIAL: '1/60' });
    const agent = await createAgent(test);
    const draft = await test.http.post('/api/v1/tasks/ai-create').set(agent.headers).send({ prompt: 'Translate a contract into Chinese' }).buffer(true);
    expect(draft.status).toBe(200);
    expect(draft.text).toContain('event: draft');
    const over = await test.http.post('/api/v1/skills/ai-create').set(agent.headers).send({ prompt: 'Logos for bakeries' });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ code: 4290, data: { detail: 'rate limit aiDraftsPerCredential reached' } });
    // The draft took nothing from the stream opens, which have their own one.
    expect(await openStream(test, agent.headers)).toBe(200);
    expect(await openStream(test, agent.headers)).toBe(429);
  });
});
