import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createApp } from '../src/app.ts';
import { createEngine, type Engine } from '../src/engine/index.ts';
import { createRedisBus, type EventBus } from '../src/events/bus.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { signUpHuman } from './helpers/actors.ts';

/**
 * Two server instances on one database: the test app (A) and a second engine and app (B). With
 * Redis, B has its own Redis connections under the same names, as another process would; on the
 * embedded default it shares the in-process bus. A key B has cached must stop working on B the
 * moment A revokes it, and user-code attempts must count in one bucket across both (with Redis).
 */
let test: TestApp;
let otherBus: EventBus | null;
let other: Engine;
let otherHttp: ReturnType<typeof supertest>;
let otherServer: Server;
let otherUrl: string;
beforeAll(async () => {
  test = await startTestApp({ TRUST_PROXY: 'true', RATE_LIMIT_USER_CODE_ATTEMPTS_PER_CODE: '4/900' });
  const dependencies = test.runtime.engine.dependencies;
  const shared = dependencies.bus.shared;
  otherBus = shared ? createRedisBus(process.env.TEST_REDIS_URL!, shared.keyPrefix) : null;
  other = await createEngine({ ...dependencies, bus: otherBus ?? dependencies.bus });
  const otherApp = createApp(other);
  otherHttp = supertest(otherApp);
  otherServer = createServer(otherApp);
  await new Promise<void>((resolve) => otherServer.listen(0, '127.0.0.1', resolve));
  otherUrl = `http://127.0.0.1:${(otherServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  otherServer?.closeAllConnections();
  await new Promise((resolve) => otherServer?.close(resolve));
  await other?.close();
  await otherBus?.close();
  await test?.close();
});

// The test app uses Redis exactly when TEST_REDIS_URL is set (helpers/app.ts).
const sharedLimits = Boolean(process.env.TEST_REDIS_URL);

async function keyThroughBothInstances() {
  const human = await signUpHuman(test);
  const flow = (await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'custom_mcp' }).expect(201)).body.data;
  await otherHttp.post('/api/v1/auth/device-auth/confirm').set(human.headers).send({ user_code: flow.user_code, decision: 'approve' }).expect(200);
  const collected = (await test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: flow.device_code }).expect(200)).body;
  expect(collected.code).toBe(0);
  return { human, flow, headers: { 'X-Api-Key': collected.data.api_key as string, 'X-Platform-User-Id': human.userId } };
}

describe('two instances', () => {
  it('stop accepting a revoked key at once on the instance that did not revoke it, although it had the key cached', async () => {
    const { human, headers } = await keyThroughBothInstances();
    // Two calls on B: the first reads the key from the database, the second from B's cache.
    for (let call = 0; call < 2; call++) expect((await otherHttp.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
    const [key] = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
    await test.http.delete(`/api/v1/auth/api-keys/${key.id}`).set(human.headers).expect(200);

    expect((await otherHttp.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
    expect((await test.http.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
  });

  it('revoked on B, refused on A', async () => {
    const { human, headers } = await keyThroughBothInstances();
    expect((await test.http.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
    const [key] = (await otherHttp.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
    await otherHttp.delete(`/api/v1/auth/api-keys/${key.id}`).set(human.headers).expect(200);
    expect((await test.http.get('/api/v1/auth/me').set(headers)).body.code).toBe(4010);
  });

  it('end the event streams the other instance had open with the revoked key', async () => {
    const { human, headers } = await keyThroughBothInstances();
    const stream = await fetch(`${otherUrl}/api/v1/transactions/events`, { headers });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    const [key] = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
    await test.http.delete(`/api/v1/auth/api-keys/${key.id}`).set(human.headers).expect(200);
    // Read until the server ends the stream (without the revocation, this waits until the test times out).
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
    expect((await fetch(`${otherUrl}/api/v1/transactions/events`, { headers })).status).toBe(401);
  });

  it(sharedLimits ? 'count user-code attempts on both instances in one bucket (Redis)' : 'count user-code attempts per instance on the embedded default (one instance, no Redis)', async () => {
    const human = await signUpHuman(test);
    const flow = (await test.http.post('/api/v1/auth/device-auth').send({}).expect(201)).body.data;
    const lookup = (http: ReturnType<typeof supertest>, address: string) =>
      http.post('/api/v1/auth/device-auth/lookup').set(human.headers).set('X-Forwarded-For', address).send({ user_code: flow.user_code });
    for (let attempt = 0; attempt < 2; attempt++) {
      expect((await lookup(test.http, `192.0.2.${attempt + 1}`)).body.code).toBe(0);
      expect((await lookup(otherHttp, `192.0.2.${attempt + 11}`)).body.code).toBe(0);
    }
    // Four attempts so far, two on each instance; the limit is four per code.
    expect((await lookup(otherHttp, '192.0.2.21')).body.code).toBe(sharedLimits ? 4290 : 0);
    expect((await lookup(otherHttp, '192.0.2.22')).body.code).toBe(sharedLimits ? 4290 : 0);
    expect((await lookup(otherHttp, '192.0.2.23')).body.code).toBe(4290);
  });
});
