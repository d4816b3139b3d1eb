import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import { createApp } from '../../src/app.ts';
import { createEngine, type Engine } from '../../src/engine/index.ts';
import { createRedisBus, type EventBus } from '../../src/events/bus.ts';
import { apiKeyRevokedChannel } from '../../src/engine/identity/index.ts';
import { limits } from '../../src/limits.ts';
import { startTestApp, withBrokenBus, type TestApp } from '../helpers/app.ts';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { buy, createCapability } from '../helpers/market.ts';

/**
 * Two server instances on one database: the test app (A) and a second engine and app (B). With
 * Redis, B has its own Redis connections under the same names, as another process would; on the
 * embedded default it shares the in-process bus. A key B has cached must stop working on B as
 * soon as B hears that A revoked it, a stream must end even on an instance that never hears it,
 * and user-code attempts must count in one bucket across both (with Redis). Each instance also
 * looks for revoked keys among its open streams every STREAM_HEARTBEAT_MS: A every 100 ms, for
 * the lost announcement, and B only every 10 minutes, so that whatever B does within a test it
 * learned from an announcement.
 */
let test: TestApp;
let testServer: Server;
let testUrl: string;
let otherBus: EventBus | null;
let other: Engine;
let otherHttp: ReturnType<typeof supertest>;
let otherServer: Server;
let otherUrl: string;

async function listen(app: ReturnType<typeof createApp>): Promise<[Server, string]> {
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return [server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`];
}

async function stop(server: Server | undefined) {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
}

beforeAll(async () => {
  test = await startTestApp({ TRUST_PROXY: 'true', RATE_LIMIT_USER_CODE_ATTEMPTS_PER_CODE: '4/900', STREAM_HEARTBEAT_MS: '100' });
  const dependencies = test.runtime.engine.dependencies;
  const shared = dependencies.bus.shared;
  otherBus = shared ? createRedisBus(process.env.TEST_REDIS_URL!, shared.keyPrefix) : null;
  other = await createEngine({ ...dependencies, bus: otherBus ?? dependencies.bus, config: { ...dependencies.config, STREAM_HEARTBEAT_MS: 600_000 } });
  const otherApp = createApp(other);
  otherHttp = supertest(otherApp);
  [otherServer, otherUrl] = await listen(otherApp);
  // Building B's app set the process's heartbeat to B's; A's streams need none in these tests.
  [testServer, testUrl] = await listen(test.app);
});
afterAll(async () => {
  await stop(otherServer);
  await stop(testServer);
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

/**
 * Redis delivers an announcement to the other instance after the DELETE has answered: asks again
 * until the key is refused, a bounded number of times, and answers the last code.
 */
async function codeOnceRefused(http: ReturnType<typeof supertest>, headers: Record<string, string>) {
  let code = (await http.get('/api/v1/auth/me').set(headers)).body.code;
  for (let attempt = 0; attempt < 50 && code !== 4010; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    code = (await http.get('/api/v1/auth/me').set(headers)).body.code;
  }
  return code;
}

const revokeOnlyKey = async (http: ReturnType<typeof supertest>, human: { headers: Record<string, string> }) => {
  const [key] = (await http.get('/api/v1/auth/api-keys').set(human.headers).expect(200)).body.data.items;
  return http.delete(`/api/v1/auth/api-keys/${key.id}`).set(human.headers).expect(200);
};

/** Reads until the server ends the stream; if nothing ended it, this waits until the test times out. */
async function readUntilEnded(stream: Response) {
  const reader = stream.body!.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read());
}

describe('two instances', () => {
  it('stop accepting a revoked key on the instance that did not revoke it as soon as it hears, although it had the key cached', async () => {
    const { human, headers } = await keyThroughBothInstances();
    // Two calls on B: the first reads the key from the database, the second from B's cache.
    for (let call = 0; call < 2; call++) expect((await otherHttp.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
    await revokeOnlyKey(test.http, human);
    // Well within the 10 s B's cache entry would live on its own.
    expect(await codeOnceRefused(otherHttp, headers)).toBe(4010);
    expect((await test.http.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
  });

  it('revoked on B, refused on A', async () => {
    const { human, headers } = await keyThroughBothInstances();
    expect((await test.http.get('/api/v1/auth/me').set(headers)).body.code).toBe(0);
    await revokeOnlyKey(otherHttp, human);
    expect(await codeOnceRefused(test.http, headers)).toBe(4010);
  });

  it('end the event streams the other instance had open with the revoked key, on hearing the revocation', async () => {
    const { human, headers } = await keyThroughBothInstances();
    const stream = await fetch(`${otherUrl}/api/v1/transactions/events`, { headers });
    expect(stream.status).toBe(200);
    await revokeOnlyKey(test.http, human);
    await readUntilEnded(stream);
    expect((await fetch(`${otherUrl}/api/v1/transactions/events`, { headers })).status).toBe(401);
  });

  it('end the event streams of a revoked key even on an instance that never hears the revocation (publishing failed)', async () => {
    const { human, headers } = await keyThroughBothInstances();
    const stream = await fetch(`${testUrl}/api/v1/transactions/events`, { headers });
    expect(stream.status).toBe(200);
    // B revokes while its bus refuses to publish: the revocation commits, the DELETE answers 200,
    // and A never hears of it. A's periodic check finds the key revoked and ends the stream.
    await withBrokenBus(otherBus ?? test.runtime.bus, 'fail', () => revokeOnlyKey(otherHttp, human));
    await readUntilEnded(stream);
    expect((await fetch(`${testUrl}/api/v1/transactions/events`, { headers })).status).toBe(401);
  });

  it('refuse a stream whose key is revoked after its authentication and before the stream is registered (REST and JSON-RPC)', async () => {
    const identity = test.runtime.engine.identity;
    const authenticate = identity.authenticate;
    /** The next request with this key hears its revocation right after its authentication. */
    const revokeWhileOpening = ({ human, headers }: Awaited<ReturnType<typeof keyThroughBothInstances>>) => {
      identity.authenticate = async (credentials, address) => {
        const principal = await authenticate(credentials, address);
        if (credentials.apiKey === headers['X-Api-Key']) {
          identity.authenticate = authenticate;
          await revokeOnlyKey(test.http, human);
        }
        return principal;
      };
      return headers;
    };
    try {
      const rest = await fetch(`${testUrl}/api/v1/transactions/events`, { headers: revokeWhileOpening(await keyThroughBothInstances()) });
      if (rest.status === 200) await rest.body!.cancel();
      expect(rest.status).toBe(401);
      expect(((await rest.json()) as { code: number }).code).toBe(4010);

      // A JSON-RPC stream needs a task of the caller's: a purchase made with the key (unfunded will do).
      const buyer = await keyThroughBothInstances();
      const capability = await createCapability(test, await createAgent(test));
      const purchase = await buy(test, { userId: buyer.human.userId, headers: buyer.headers }, capability.id);
      const rpc = await fetch(`${testUrl}/api/v1/rpc`, {
        method: 'POST',
        headers: { ...revokeWhileOpening(buyer), 'Content-Type': 'application/json', Accept: 'text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: purchase.id } }),
      });
      // Without the check this is a stream of the task's events; with it, one error: unauthenticated.
      expect(await rpc.text()).toContain('"code":-32110');
    } finally {
      identity.authenticate = authenticate;
    }
  });

  it('announce a repeated revocation again only while an instance may still have the key cached', async () => {
    const { human } = await keyThroughBothInstances();
    // Heard as every instance hears it; a DELETE answers once every listener has heard it.
    const announced: string[] = [];
    const stopListening = await test.runtime.bus.subscribe(apiKeyRevokedChannel, (message) => announced.push(message));
    try {
      const first = await revokeOnlyKey(test.http, human);
      const again = () => test.http.delete(`/api/v1/auth/api-keys/${first.body.data.id}`).set(human.headers).expect(200);
      // At once, a repeat may repair a lost announcement.
      await again();
      expect(announced).toHaveLength(2);
      // Once every cache entry of the key has ended, there is nothing left to repair.
      test.clock.advanceMs(limits.credentialCacheTtlMs);
      expect((await again()).body.data.revoked_at).toBe(first.body.data.revoked_at);
      expect(announced).toHaveLength(2);
    } finally {
      await stopListening();
    }
  });

  it(
    sharedLimits
      ? 'count user-code attempts on both instances in one bucket (Redis)'
      : 'count user-code attempts per instance on the embedded default (one instance, no Redis)',
    async () => {
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
    },
  );
});
