import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createApiKey, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, testAdminToken, testJwtSecret, type TestApp, raceTest } from '../helpers/app.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const me = (headers: Record<string, string>) => test.http.get('/api/v1/auth/me').set(headers);

describe('GET /api/v1/auth/me', () => {
  it('resolves a bearer token to a human caller', async () => {
    const human = await signUpHuman(test);
    const response = await me(human.headers).expect(200);
    expect(response.body.data).toEqual({ user_id: human.userId, caller_type: 'human', agent_platform_type: null, agent_budget: null });
  });

  it('resolves an API key and a linked user to an agent caller of that platform', async () => {
    const key = await createApiKey(test, 'custom_mcp');
    const agent = await createAgent(test, key);
    const response = await me(agent.headers).expect(200);
    expect(response.body.data).toEqual({ user_id: agent.userId, caller_type: 'agent', agent_platform_type: 'custom_mcp', agent_budget: null });
  });

  it('refuses both credential kinds in one request with 4011 and HTTP 400', async () => {
    const human = await signUpHuman(test);
    const agent = await createAgent(test);
    const response = await me({ ...agent.headers, ...human.headers }).expect(400);
    expect(response.body.code).toBe(4011);
  });

  it('refuses a request with no credentials with 4010 and HTTP 401', async () => {
    const response = await test.http.get('/api/v1/auth/me').expect(401);
    expect(response.body.code).toBe(4010);
  });

  it('refuses an API key acting for a user that is not linked to it', async () => {
    const agent = await createAgent(test);
    const stranger = await signUpHuman(test);
    const response = await me({ 'X-Api-Key': agent.apiKey, 'X-Platform-User-Id': stranger.userId }).expect(401);
    expect(response.body.code).toBe(4010);
  });

  it('refuses an API key without X-Platform-User-Id, and a user id without a key', async () => {
    const agent = await createAgent(test);
    expect((await me({ 'X-Api-Key': agent.apiKey }).expect(401)).body.code).toBe(4010);
    expect((await me({ 'X-Platform-User-Id': agent.userId }).expect(401)).body.code).toBe(4010);
  });

  it('refuses an unknown API key and a tampered one', async () => {
    const agent = await createAgent(test);
    const tampered = agent.apiKey.slice(0, -1) + (agent.apiKey.endsWith('A') ? 'B' : 'A');
    expect((await me({ ...agent.headers, 'X-Api-Key': tampered }).expect(401)).body.code).toBe(4010);
    expect((await me({ ...agent.headers, 'X-Api-Key': 'mk_nothing' }).expect(401)).body.code).toBe(4010);
  });

  it('refuses a non-UUID X-Platform-User-Id', async () => {
    const agent = await createAgent(test);
    expect((await me({ ...agent.headers, 'X-Platform-User-Id': 'alice' }).expect(401)).body.code).toBe(4010);
  });

  it('lets an auto-provisioning key act for a new user id, creating it once', async () => {
    const key = await createApiKey(test, 'trusted_platform', { auto_provision: true });
    const userId = crypto.randomUUID();
    const headers = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': userId };
    expect((await me(headers).expect(200)).body.data.user_id).toBe(userId);
    expect((await me(headers).expect(200)).body.data.caller_type).toBe('agent');
  });

  it('never lets an auto-provisioning key take over an existing user it is not linked to', async () => {
    const key = await createApiKey(test, 'trusted_platform', { auto_provision: true });
    const human = await signUpHuman(test);
    const response = await me({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': human.userId }).expect(401);
    expect(response.body.code).toBe(4010);
  });

  it('refuses an expired JWT', async () => {
    const human = await signUpHuman(test);
    const expired = jwt.sign({ sub: human.userId, exp: Math.floor(Date.now() / 1000) - 10 }, testJwtSecret, { algorithm: 'HS256' });
    expect((await me({ Authorization: `Bearer ${expired}` }).expect(401)).body.code).toBe(4010);
  });

  it('refuses a JWT without exp', async () => {
    const human = await signUpHuman(test);
    const eternal = jwt.sign({ sub: human.userId }, testJwtSecret, { algorithm: 'HS256' });
    expect((await me({ Authorization: `Bearer ${eternal}` }).expect(401)).body.code).toBe(4010);
  });

  it('refuses a JWT with alg none', async () => {
    const human = await signUpHuman(test);
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ sub: human.userId, exp: Math.floor(Date.now() / 1000) + 600 })}.`;
    expect((await me({ Authorization: `Bearer ${unsigned}` }).expect(401)).body.code).toBe(4010);
  });

  it('refuses a JWT signed with another algorithm or another secret', async () => {
    const human = await signUpHuman(test);
    const hs512 = jwt.sign({ sub: human.userId }, testJwtSecret, { algorithm: 'HS512', expiresIn: 600 });
    const otherSecret = jwt.sign({ sub: human.userId }, 'another-secret-0123456789abcdef', { algorithm: 'HS256', expiresIn: 600 });
    expect((await me({ Authorization: `Bearer ${hs512}` }).expect(401)).body.code).toBe(4010);
    expect((await me({ Authorization: `Bearer ${otherSecret}` }).expect(401)).body.code).toBe(4010);
  });

  it('reads the scheme name in any letter case, as RFC 9110 has it', async () => {
    const human = await signUpHuman(test);
    const token = human.token;
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      expect((await me({ Authorization: `${scheme} ${token}` }).expect(200)).body.data.user_id).toBe(human.userId);
    }
    expect((await me({ Authorization: `Bearerx ${token}` }).expect(401)).body.code).toBe(4010);
  });

  it('refuses a malformed Authorization header and a token for an unknown user', async () => {
    expect((await me({ Authorization: 'Basic dXNlcjpwYXNz' }).expect(401)).body.code).toBe(4010);
    const ghost = jwt.sign({ sub: crypto.randomUUID() }, testJwtSecret, { algorithm: 'HS256', expiresIn: 600 });
    expect((await me({ Authorization: `Bearer ${ghost}` }).expect(401)).body.code).toBe(4010);
  });
});

describe('admin endpoints', () => {
  it('create an API key only with the admin token', async () => {
    const human = await signUpHuman(test);
    const agent = await createAgent(test);
    const body = { agent_platform_type: 'custom_mcp' };
    expect((await test.http.post('/api/v1/admin/api-keys').send(body).expect(401)).body.code).toBe(4010);
    expect((await test.http.post('/api/v1/admin/api-keys').set('X-Admin-Token', 'wrong-token').send(body).expect(401)).body.code).toBe(4010);
    expect((await test.http.post('/api/v1/admin/api-keys').set(human.headers).send(body).expect(401)).body.code).toBe(4010);
    expect((await test.http.post('/api/v1/admin/api-keys').set(agent.headers).send(body).expect(401)).body.code).toBe(4010);
  });

  it('show the key once and never store it in plain text', async () => {
    const key = await createApiKey(test, 'custom_mcp', { name: 'CI key' });
    expect(key.api_key).toMatch(/^mk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const stored = await test.runtime.database.db('api_keys').where({ id: key.id }).first();
    // The secret is everything after `mk_<prefix>_`; it may itself contain '_', so it is not
    // split on it (a split once left a one-letter fragment that a hash happened to contain).
    const secret = key.api_key.slice('mk_'.length + 12 + 1);
    expect(secret).toHaveLength(43);
    expect(JSON.stringify(stored)).not.toContain(secret);
  });

  it('validate the key request and the link request', async () => {
    const admin = { 'X-Admin-Token': testAdminToken };
    expect((await test.http.post('/api/v1/admin/api-keys').set(admin).send({ agent_platform_type: 'Bad Value!' }).expect(400)).body.code).toBe(4000);
    const key = await createApiKey(test);
    expect((await test.http.post(`/api/v1/admin/api-keys/${key.id}/links`).set(admin).send({ user_id: 'x' }).expect(400)).body.code).toBe(4000);
    expect((await test.http.post('/api/v1/admin/api-keys/not-a-uuid/links').set(admin).send({ user_id: crypto.randomUUID() }).expect(400)).body.code).toBe(
      4000,
    );
  });

  it('answer 4040 when linking an unknown key or an unknown user', async () => {
    const admin = { 'X-Admin-Token': testAdminToken };
    const human = await signUpHuman(test);
    const key = await createApiKey(test);
    expect((await test.http.post(`/api/v1/admin/api-keys/${crypto.randomUUID()}/links`).set(admin).send({ user_id: human.userId }).expect(404)).body.code).toBe(
      4040,
    );
    expect((await test.http.post(`/api/v1/admin/api-keys/${key.id}/links`).set(admin).send({ user_id: crypto.randomUUID() }).expect(404)).body.code).toBe(4040);
  });

  it('link idempotently: linking twice keeps one working link', async () => {
    const agent = await createAgent(test);
    await test.http.post(`/api/v1/admin/api-keys/${agent.apiKeyId}/links`).set('X-Admin-Token', testAdminToken).send({ user_id: agent.userId }).expect(201);
    expect((await me(agent.headers).expect(200)).body.data.user_id).toBe(agent.userId);
  });
});

describe(raceTest('an auto-provisioning key under concurrency'), () => {
  it('lets every one of many parallel first requests for a new user through', async () => {
    const key = await createApiKey(test, 'trusted_platform', { auto_provision: true });
    const headers = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': crypto.randomUUID() };
    const responses = await Promise.all(Array.from({ length: 10 }, () => me(headers)));
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 10 }, () => 200));
  });
});
