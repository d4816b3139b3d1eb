import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { createAgent, createApiKey, signUpHuman } from '../helpers/actors.ts';

/**
 * Device authorization through the public API, as a client and the verification page call it:
 * every poll answer, the growing interval, expiry, single use under concurrency, the page's calls
 * and who may not make them, forged confirmations, and the person's own keys.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({
    TRUST_PROXY: 'true',
    RATE_LIMIT_USER_CODE_ATTEMPTS_PER_ADDRESS: '5/900',
    RATE_LIMIT_USER_CODE_ATTEMPTS_PER_CODE: '4/900',
    RATE_LIMIT_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '3/3600',
    RATE_LIMIT_USER_CODE_FAILURES_PER_ACCOUNT: '6/900',
  });
});
afterAll(() => test.close());

type Human = Awaited<ReturnType<typeof signUpHuman>>;
const pageOrigin = 'http://127.0.0.1:3000';
// Each start and page call comes from an address of its own, so that only the tests of the
// per-address buckets meet them.
let addressNumber = 0;
const freshAddress = () => `198.51.${Math.floor(addressNumber / 250)}.${(addressNumber++ % 250) + 1}`;

const start = (body: unknown = { agent_platform_type: 'claude_code' }, address = freshAddress()) =>
  test.http
    .post('/api/v1/auth/device-auth')
    .set('X-Forwarded-For', address)
    .send(body as object);
const poll = (deviceCode: string) => test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: deviceCode });
/** A poll that keeps the interval, as a well-behaved client does. */
function pollOnTime(deviceCode: string) {
  test.clock.advanceMs(10_000);
  return poll(deviceCode);
}
const page = (action: 'lookup' | 'confirm', human: Human, body: object, address = freshAddress()) =>
  test.http.post(`/api/v1/auth/device-auth/${action}`).set(human.headers).set('Origin', pageOrigin).set('X-Forwarded-For', address).send(body);

async function started(platform = 'claude_code') {
  const response = await start({ agent_platform_type: platform }).expect(201);
  return response.body.data as { device_code: string; user_code: string; interval: number; expires_in: number };
}

async function approved(human: Human) {
  const flow = await started();
  expect((await page('confirm', human, { user_code: flow.user_code, decision: 'approve' })).body.code).toBe(0);
  return flow;
}

describe('starting', () => {
  it('answers both codes, where to go, and how often to poll', async () => {
    const response = await start().expect(201);
    const data = response.body.data;
    expect(data).toMatchObject({ verification_url: 'http://127.0.0.1:3000/device', expires_in: 900, interval: 5, agent_platform_type: 'claude_code' });
    expect(data.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(data.device_code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(data.verification_url_complete).toBe(`http://127.0.0.1:3000/device?user_code=${data.user_code}`);
    const other = (await start().expect(201)).body.data;
    expect(other.device_code).not.toBe(data.device_code);
    expect(other.user_code).not.toBe(data.user_code);
  });

  it('stores neither code, and the user code not as a plain hash that trying all 20^8 codes would reverse', async () => {
    const data = (await start().expect(201)).body.data;
    const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
    const [row, ...none] = await test.runtime.engine.dependencies.db('device_authorizations').where({ device_code_hash: sha256(data.device_code) });
    expect(none).toEqual([]);
    const userCode = data.user_code.replace('-', '');
    expect(JSON.stringify(row)).not.toContain(data.device_code);
    expect(JSON.stringify(row)).not.toContain(userCode);
    expect(row.user_code_hash).not.toBe(sha256(userCode));
  });

  it('defaults the platform to custom_mcp and refuses unknown platforms and bodies', async () => {
    expect((await start({}).expect(201)).body.data.agent_platform_type).toBe('custom_mcp');
    const unknown = await start({ agent_platform_type: 'someone_else' }).expect(400);
    expect(unknown.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.agent_platform_type' }] } });
    expect((await start([1]).expect(400)).body.code).toBe(4001);
    expect((await test.http.post('/api/v1/auth/device-auth').set('Content-Type', 'application/json').send('{').expect(400)).body.code).toBe(4001);
  });

  it('is limited per client address (each request is a row until it expires)', async () => {
    for (let request = 0; request < 3; request++) await start(undefined, '203.0.113.90').expect(201);
    expect((await start(undefined, '203.0.113.90').expect(429)).body.code).toBe(4290);
    await start(undefined, '203.0.113.91').expect(201);
  });
});

describe('polling', () => {
  it('is 4801 pending until the person answers', async () => {
    const flow = await started();
    const response = await poll(flow.device_code).expect(200);
    expect(response.body).toMatchObject({ code: 4801, message: 'authorization_pending', data: { status: 'pending' } });
  });

  it('is 4802 slow_down when too fast, and the interval grows by 5 s each time (RFC 8628)', async () => {
    const flow = await started();
    expect((await poll(flow.device_code)).body.code).toBe(4801);
    const tooFast = await poll(flow.device_code).expect(200);
    expect(tooFast.body).toMatchObject({ code: 4802, message: 'slow_down', data: { interval: 10 } });
    test.clock.advanceMs(6_000);
    expect((await poll(flow.device_code)).body).toMatchObject({ code: 4802, data: { interval: 15 } });
    test.clock.advanceMs(15_000);
    expect((await poll(flow.device_code)).body).toMatchObject({ code: 4801, data: { interval: 15 } });
  });

  it('counts a poll up to a second early as on time (a fixed timer, a little jitter), not earlier', async () => {
    const flow = await started();
    expect((await poll(flow.device_code)).body.code).toBe(4801);
    test.clock.advanceMs(flow.interval * 1000 - 500);
    expect((await poll(flow.device_code)).body).toMatchObject({ code: 4801, data: { interval: 5 } });
    test.clock.advanceMs(flow.interval * 1000 - 1500);
    expect((await poll(flow.device_code)).body).toMatchObject({ code: 4802, data: { interval: 10 } });
  });

  it('answers the key once on approval; the key acts for the approver only; a second poll is 4803', async () => {
    const human = await signUpHuman(test);
    const other = await signUpHuman(test);
    const flow = await approved(human);
    const response = await pollOnTime(flow.device_code).expect(200);
    expect(response.body).toMatchObject({ code: 0, data: { status: 'approved', user_id: human.userId, agent_platform_type: 'claude_code' } });
    const apiKey = response.body.data.api_key as string;
    const me = await test.http.get('/api/v1/auth/me').set({ 'X-Api-Key': apiKey, 'X-Platform-User-Id': human.userId }).expect(200);
    expect(me.body.data).toEqual({ user_id: human.userId, caller_type: 'agent', agent_platform_type: 'claude_code', agent_budget: null });
    expect((await test.http.get('/api/v1/auth/me').set({ 'X-Api-Key': apiKey, 'X-Platform-User-Id': other.userId })).body.code).toBe(4010);
    expect((await test.http.get('/api/v1/auth/me').set({ 'X-Api-Key': apiKey, 'X-Platform-User-Id': randomUUID() })).body.code).toBe(4010);

    const again = await pollOnTime(flow.device_code).expect(410);
    expect(again.body).toMatchObject({ code: 4803, message: 'expired_token' });
  });

  it('is 4804 access_denied after a denial, and the code cannot be answered again', async () => {
    const human = await signUpHuman(test);
    const flow = await started();
    const denied = await page('confirm', human, { user_code: flow.user_code, decision: 'deny' });
    expect(denied.body).toMatchObject({ code: 0, data: { status: 'denied', agent_platform_type: 'claude_code' } });
    expect((await pollOnTime(flow.device_code).expect(403)).body).toMatchObject({ code: 4804, message: 'access_denied' });
    expect((await page('confirm', human, { user_code: flow.user_code, decision: 'approve' }).expect(410)).body.code).toBe(4803);
    expect((await pollOnTime(flow.device_code)).body.code).toBe(4804);
  });

  it('is 4803 once the code expired, for the client and for the page', async () => {
    const human = await signUpHuman(test);
    const flow = await started();
    test.clock.advanceMs(flow.expires_in * 1000);
    expect((await poll(flow.device_code).expect(410)).body.code).toBe(4803);
    expect((await page('lookup', human, { user_code: flow.user_code }).expect(410)).body.code).toBe(4803);
    expect((await page('confirm', human, { user_code: flow.user_code, decision: 'approve' }).expect(410)).body.code).toBe(4803);
  });

  it('is 4803 for an approved request not collected before it expired', async () => {
    const human = await signUpHuman(test);
    const flow = await approved(human);
    test.clock.advanceMs(flow.expires_in * 1000);
    expect((await poll(flow.device_code).expect(410)).body.code).toBe(4803);
    expect((await test.http.get('/api/v1/auth/api-keys').set(human.headers)).body.data.total).toBe(0);
  });

  it('is 4803 for a device code nobody issued, and 4000 for one of the wrong shape', async () => {
    expect((await poll('A'.repeat(43)).expect(410)).body.code).toBe(4803);
    expect((await poll('short').expect(400)).body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.device_code' }] } });
    expect((await test.http.post('/api/v1/auth/device-auth/poll').send({}).expect(400)).body.code).toBe(4000);
  });

  it('is documented with every answer, the approved key beside 4801 and 4802 under HTTP 200', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const operation = document.paths['/api/v1/auth/device-auth/poll'].post;
    expect(operation.responses['200'].description).toBe('success, 4801 authorization_pending, 4802 slow_down');
    expect(operation.responses['200'].content['application/json'].schema.oneOf).toHaveLength(2);
    expect(operation.responses['410'].description).toContain('4803 expired_token');
    expect(operation.responses['403'].description).toContain('4804 access_denied');
  });

  it(raceTest('issues exactly one key to concurrent polls after approval'), async () => {
    const human = await signUpHuman(test);
    const flow = await approved(human);
    test.clock.advanceMs(10_000);
    const answers = await Promise.all(Array.from({ length: 8 }, () => poll(flow.device_code)));
    const codes = answers.map((answer) => answer.body.code).sort();
    expect(codes.filter((code) => code === 0)).toHaveLength(1);
    expect(codes.filter((code) => code !== 0).every((code) => code === 4803)).toBe(true);
    const keys = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data;
    expect(keys.total).toBe(1);
  });
});

describe('the verification page calls', () => {
  it('look a code up in any spelling and show what asks', async () => {
    const human = await signUpHuman(test);
    const flow = await started('cursor');
    const typed = flow.user_code.replace('-', ' ').toLowerCase();
    const response = await page('lookup', human, { user_code: typed }).expect(200);
    expect(response.body.data).toMatchObject({ user_code: flow.user_code, agent_platform_type: 'cursor', agent_platform_name: 'Cursor', status: 'pending' });
    expect(Date.parse(response.body.data.expires_at) - Date.parse(response.body.data.requested_at)).toBe(900_000);
  });

  it('answer 4040 for a wrong user code and 4000 for one that cannot be a code', async () => {
    const human = await signUpHuman(test);
    await started();
    expect((await page('lookup', human, { user_code: 'BBBB-BBBB' }).expect(404)).body.code).toBe(4040);
    expect((await page('confirm', human, { user_code: 'BBBB-BBBB', decision: 'approve' }).expect(404)).body.code).toBe(4040);
    const malformed = await page('lookup', human, { user_code: 'AEIO-1234' }).expect(400);
    expect(malformed.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.user_code' }] } });
    expect((await page('confirm', human, { user_code: (await started()).user_code, decision: 'maybe' }).expect(400)).body.code).toBe(4000);
  });

  it('refuse callers without credentials (4010), agents (4030) and mixed credentials (4011)', async () => {
    const flow = await started();
    const agent = await createAgent(test);
    const human = await signUpHuman(test);
    for (const action of ['lookup', 'confirm'] as const) {
      const body = { user_code: flow.user_code, decision: 'approve' };
      expect((await test.http.post(`/api/v1/auth/device-auth/${action}`).send(body).expect(401)).body.code).toBe(4010);
      expect((await test.http.post(`/api/v1/auth/device-auth/${action}`).set(agent.headers).send(body).expect(403)).body.code).toBe(4030);
      expect(
        (
          await test.http
            .post(`/api/v1/auth/device-auth/${action}`)
            .set({ ...agent.headers, ...human.headers })
            .send(body)
            .expect(400)
        ).body.code,
      ).toBe(4011);
    }
    expect((await poll(flow.device_code)).body.code).toBe(4801);
  });

  it('refuse a forged confirmation: a cross-site form (no token) and a cross-origin request with a token', async () => {
    const human = await signUpHuman(test);
    const flow = await started();
    // What a hostile page can make a browser send: a form post, with no Authorization header.
    const form = await test.http
      .post('/api/v1/auth/device-auth/confirm')
      .set('Origin', 'https://attacker.example')
      .type('form')
      .send({ user_code: flow.user_code, decision: 'approve' });
    expect(form.body.code).toBe(4010);
    const plain = await test.http
      .post('/api/v1/auth/device-auth/confirm')
      .set('Content-Type', 'text/plain')
      .send(JSON.stringify({ user_code: flow.user_code, decision: 'approve' }));
    expect(plain.body.code).toBe(4010);
    // Even holding the token, a request a browser marks as cross-site is refused.
    const crossOrigin = await test.http
      .post('/api/v1/auth/device-auth/confirm')
      .set(human.headers)
      .set('Origin', 'https://attacker.example')
      .send({ user_code: flow.user_code, decision: 'approve' });
    expect(crossOrigin.status).toBe(403);
    expect(crossOrigin.body).toMatchObject({ code: 4030, data: { detail: 'cross-site request refused' } });
    const crossSite = await test.http
      .post('/api/v1/auth/device-auth/confirm')
      .set(human.headers)
      .set('Sec-Fetch-Site', 'cross-site')
      .send({ user_code: flow.user_code, decision: 'approve' });
    expect(crossSite.body.code).toBe(4030);
    expect((await poll(flow.device_code)).body.code).toBe(4801);
    // The page's own call (same origin) goes through.
    expect((await page('confirm', human, { user_code: flow.user_code, decision: 'approve' })).body.code).toBe(0);
  });

  it('limit user-code attempts per client address, right or wrong', async () => {
    const human = await signUpHuman(test);
    const address = '203.0.113.77';
    for (let attempt = 0; attempt < 5; attempt++) {
      expect((await page('lookup', human, { user_code: `BBBB-BBB${'CDFGH'[attempt]}` }, address)).body.code).toBe(4040);
    }
    const flow = await started();
    const refused = await page('lookup', human, { user_code: flow.user_code }, address).expect(429);
    expect(refused.body).toMatchObject({ code: 4290, data: { retry_after_seconds: expect.any(Number) } });
    expect(refused.headers['retry-after']).toBe(String(refused.body.data.retry_after_seconds));
    expect((await page('lookup', human, { user_code: flow.user_code }, '203.0.113.78')).body.code).toBe(0);
  });

  it('limit wrong user codes per person, from any address; right codes do not count, and an exhausted person is refused even a right one', async () => {
    const human = await signUpHuman(test);
    const wrong = (index: number) => page('lookup', human, { user_code: `BBBB-BC${'BCDFGHJK'[index]}B` });
    for (let attempt = 0; attempt < 5; attempt++) expect((await wrong(attempt)).body.code).toBe(4040);
    const right = await started();
    for (let attempt = 0; attempt < 2; attempt++) expect((await page('lookup', human, { user_code: right.user_code })).body.code).toBe(0);
    // The sixth wrong code, each from an address of its own: the per-address buckets never fill.
    expect((await wrong(5)).body.code).toBe(4040);
    expect((await wrong(6).expect(429)).body.code).toBe(4290);
    expect((await page('confirm', human, { user_code: right.user_code, decision: 'approve' }).expect(429)).body.code).toBe(4290);
    // Another person is not affected.
    expect((await page('confirm', await signUpHuman(test), { user_code: right.user_code, decision: 'approve' })).body.code).toBe(0);
  });

  it(raceTest('let exactly one of an approval and a denial sent at once stand'), async () => {
    const human = await signUpHuman(test);
    const flows = await Promise.all([started(), started()]);
    for (const flow of flows) {
      const answers = await Promise.all((['approve', 'deny'] as const).map((decision) => page('confirm', human, { user_code: flow.user_code, decision })));
      const [approval, denial] = answers.map((answer) => answer.body.code);
      expect([approval, denial].sort()).toEqual([0, 4803]);
      // The client hears the answer that stood.
      test.clock.advanceMs(10_000);
      expect((await poll(flow.device_code)).body.code).toBe(approval === 0 ? 0 : 4804);
    }
  });

  it('limit attempts on one code from any address', async () => {
    const human = await signUpHuman(test);
    const flow = await started();
    for (let attempt = 0; attempt < 4; attempt++) expect((await page('lookup', human, { user_code: flow.user_code })).body.code).toBe(0);
    expect((await page('confirm', human, { user_code: flow.user_code, decision: 'approve' }).expect(429)).body.code).toBe(4290);
    expect((await poll(flow.device_code)).body.code).toBe(4801);
  });
});

describe("a person's API keys", () => {
  it('are listed for their owner only, and revoking one stops it at once', async () => {
    const human = await signUpHuman(test);
    const stranger = await signUpHuman(test);
    const flow = await approved(human);
    const { api_key: apiKey } = (await pollOnTime(flow.device_code)).body.data;
    const agentHeaders = { 'X-Api-Key': apiKey, 'X-Platform-User-Id': human.userId };
    expect((await test.http.get('/api/v1/auth/me').set(agentHeaders)).body.code).toBe(0);

    const list = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data;
    expect(list).toMatchObject({ total: 1, page: 1, has_more: false, items: [{ agent_platform_type: 'claude_code', name: 'Claude Code', revoked_at: null }] });
    expect(apiKey).toContain(list.items[0].key_prefix);
    expect((await test.http.get('/api/v1/auth/api-keys').set(stranger.headers)).body.data.total).toBe(0);

    const id = list.items[0].id as string;
    expect((await test.http.delete(`/api/v1/auth/api-keys/${id}`).set(stranger.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get('/api/v1/auth/me').set(agentHeaders)).body.code).toBe(0);
    const revoked = await test.http.delete(`/api/v1/auth/api-keys/${id}`).set(human.headers).expect(200);
    expect(revoked.body.data.revoked_at).toEqual(expect.any(String));
    expect((await test.http.get('/api/v1/auth/me').set(agentHeaders).expect(401)).body.code).toBe(4010);
    const again = await test.http.delete(`/api/v1/auth/api-keys/${id}`).set(human.headers).expect(200);
    expect(again.body.data.revoked_at).toBe(revoked.body.data.revoked_at);
  });

  it('refuse the operator key, unknown ids, bad ids, agents, no credentials and mixed credentials', async () => {
    const human = await signUpHuman(test);
    const operatorKey = await createApiKey(test);
    const agent = await createAgent(test, operatorKey);
    expect((await test.http.delete(`/api/v1/auth/api-keys/${operatorKey.id}`).set(human.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.delete(`/api/v1/auth/api-keys/${randomUUID()}`).set(human.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.delete('/api/v1/auth/api-keys/not-a-uuid').set(human.headers).expect(400)).body.code).toBe(4000);
    expect((await test.http.get('/api/v1/auth/api-keys?page_size=0').set(human.headers).expect(400)).body.code).toBe(4000);
    expect((await test.http.get('/api/v1/auth/api-keys').expect(401)).body.code).toBe(4010);
    expect((await test.http.get('/api/v1/auth/api-keys').set(agent.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.delete(`/api/v1/auth/api-keys/${operatorKey.id}`).set(agent.headers).expect(403)).body.code).toBe(4030);
    expect(
      (
        await test.http
          .get('/api/v1/auth/api-keys')
          .set({ ...agent.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
    expect((await test.http.delete(`/api/v1/auth/api-keys/${operatorKey.id}`).expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .delete(`/api/v1/auth/api-keys/${operatorKey.id}`)
          .set({ ...agent.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
    expect((await test.http.get('/api/v1/auth/me').set(agent.headers)).body.code).toBe(0);
  });
});
