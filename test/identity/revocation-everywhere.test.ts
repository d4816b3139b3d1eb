import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createApp } from '../../src/app.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { apiKeyRevokedChannel } from '../../src/engine/identity/index.ts';
import { createRedisBus, type EventBus } from '../../src/events/bus.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { signUpHuman } from '../helpers/actors.ts';

/**
 * Credentials are resolved from each instance's memory (engine/identity/identity.ts), and a
 * revocation still holds everywhere once its DELETE has answered: the revoking instance waits
 * until every instance that heard the announcement says it forgot the key
 * (docs/decisions/identity-and-access.md "A revocation holds everywhere when its DELETE answers").
 * Two instances on one database: the test app (A) and a second engine and app (B), each with its
 * own Redis connections when the run has Redis (as two processes would), sharing the in-process
 * bus otherwise (where every listener hears an announcement before it is published). No request
 * below waits or retries: the very next request after the DELETE is refused on the other instance,
 * though on Redis that instance acts on what it hears only after a pause.
 */
let test: TestApp;
let otherBus: EventBus | null;
let other: Engine;
let otherHttp: ReturnType<typeof supertest>;

beforeAll(async () => {
  test = await startTestApp();
  const dependencies = test.runtime.engine.dependencies;
  const shared = dependencies.bus.shared;
  otherBus = shared ? createRedisBus(process.env.TEST_REDIS_URL!, shared.keyPrefix) : null;
  if (otherBus) {
    // B is busy: it acts on a revocation a while after Redis delivered it. Answering the DELETE
    // before B had acted would let the next request on B through.
    const subscribe = otherBus.subscribe.bind(otherBus);
    otherBus.subscribe = (channel, handler) =>
      subscribe(channel, channel === apiKeyRevokedChannel ? (message) => void setTimeout(() => handler(message), 300) : handler);
  }
  other = await createEngine({ ...dependencies, bus: otherBus ?? dependencies.bus });
  otherHttp = supertest(createApp(other));
});
afterAll(async () => {
  await other?.close();
  await otherBus?.close();
  await test?.close();
});

/** A person's key from the device flow, approved on B and collected on A. */
async function personalKey() {
  const human = await signUpHuman(test);
  const flow = (await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'custom_mcp' }).expect(201)).body.data;
  await otherHttp.post('/api/v1/auth/device-auth/confirm').set(human.headers).send({ user_code: flow.user_code, decision: 'approve' }).expect(200);
  const collected = (await test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: flow.device_code }).expect(200)).body.data;
  const [key] = (await test.http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
  return { human, keyId: key.id as string, headers: { 'X-Api-Key': collected.api_key as string, 'X-Platform-User-Id': human.userId } };
}

describe('a revoked key', () => {
  it('is refused on the other instance by the first request after the DELETE, though that instance had it cached', async () => {
    const { human, keyId, headers } = await personalKey();
    // Twice on each: the second answer comes from the instance's memory.
    for (let call = 0; call < 2; call++) {
      expect((await otherHttp.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
      expect((await test.http.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
    }
    await test.http.delete(`/api/v1/auth/api-keys/${keyId}`).set(human.headers).expect(200);
    expect((await otherHttp.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
    expect((await test.http.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
  });

  it('is refused on the instance that did not revoke it in the other direction too, for REST and JSON-RPC', async () => {
    const { human, keyId, headers } = await personalKey();
    const call = { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} };
    expect((await test.http.post('/api/v1/rpc').set(headers).send(call)).status).toBe(200);
    expect((await test.http.get('/api/v1/wallet/').set(headers)).body.code).toBe(0);
    await otherHttp.delete(`/api/v1/auth/api-keys/${keyId}`).set(human.headers).expect(200);
    expect((await test.http.post('/api/v1/rpc').set(headers).send(call)).status).toBe(401);
    expect((await test.http.get('/api/v1/wallet/').set(headers).expect(401)).body.code).toBe(4010);
  });
});
