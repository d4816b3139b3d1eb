import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CredentialKind, type Outcome, type Party, credentialOutcomes, routeAccess, routeKey, routesWithoutRow } from '../rest/access-matrix.ts';
import type { RouteSpec } from '../rest/route.ts';
import { allRoutes } from '../src/app.ts';
import { rateLimitNames, rateLimitVariable } from '../src/config.ts';
import { signUpHuman } from './helpers/actors.ts';
import { type TestApp, startTestApp, testAdminToken } from './helpers/app.ts';

/**
 * The access matrix (issue 16, point 4): every route of the route table, called by every kind of
 * caller, answers as its row in rest/access-matrix.ts says. Each route gets a world of its own
 * (three agents of one platform key, a capability, a demand and a bought transaction of the
 * owner's, a device request), so a call that changes something (a revoked key, a cancelled
 * demand) cannot change another route's answer. Refusals are checked first, the allowed calls
 * last. A route without a row fails the first test.
 */
let test: TestApp;
let server: Server;
let base: string;
let person: { email: string; password: string };
beforeAll(async () => {
  // Each route's world starts device requests and answers them from this one address: the
  // per-address limits on those (tested in their own files) would stop the matrix half-way.
  test = await startTestApp(Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), 'off'])));
  person = await signUpHuman(test);
  server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

type Headers = Record<string, string>;
const admin = { 'X-Admin-Token': testAdminToken };

/** One call; a stream's answer is read up to its status, then the stream is closed. */
async function call(method: string, path: string, headers: Headers, body?: unknown): Promise<{ status: number; code: number | null }> {
  const abort = new AbortController();
  const response = await fetch(`${base}${path}`, {
    method: method.toUpperCase(), signal: abort.signal,
    headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    abort.abort();
    return { status: response.status, code: null };
  }
  const text = await response.text();
  const parsed = text.startsWith('{') ? (JSON.parse(text) as { code?: unknown }) : {};
  return { status: response.status, code: typeof parsed.code === 'number' ? parsed.code : null };
}

async function ok<T>(method: string, path: string, headers: Headers, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, { method, headers: { 'Content-Type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = (await response.json()) as { code: number; data: T };
  if (answer.code !== 0) throw new Error(`${method} ${path}: ${JSON.stringify(answer)}`);
  return answer.data;
}

interface World {
  callers: Record<Party | CredentialKind, Headers>;
  ids: { cap_id: string; demand_id: string; tx_id: string; id: string; otherCapabilityId: string; ownerId: string };
  userCode: string;
  deviceCode: string;
}

/** A device request of the platform's, approved by `approver` (a human): the key it gave. */
async function approvedKey(approver: Headers): Promise<{ id: string; api_key: string }> {
  const started = await ok<{ device_code: string; user_code: string }>('POST', '/api/v1/auth/device-auth', {}, { agent_platform_type: 'cursor' });
  await ok('POST', '/api/v1/auth/device-auth/confirm', approver, { user_code: started.user_code, decision: 'approve' });
  test.clock.advanceMs(10_000);
  const approved = await ok<{ api_key: string }>('POST', '/api/v1/auth/device-auth/poll', {}, { device_code: started.device_code });
  const keys = await ok<{ items: { id: string }[] }>('GET', '/api/v1/auth/api-keys', approver);
  return { id: keys.items[0]!.id, api_key: approved.api_key };
}

async function newWorld(): Promise<World> {
  const key = await ok<{ id: string; api_key: string }>('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true });
  const agent = async () => {
    const headers = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() };
    const me = await ok<{ user_id: string }>('GET', '/api/v1/auth/me', headers);
    return { headers, userId: me.user_id };
  };
  const [owner, counterparty, other] = [await agent(), await agent(), await agent()];
  const { jwt } = test.runtime.engine.dependencies;
  const ownerAsHuman = { Authorization: `Bearer ${jwt.sign(owner.userId).token}` };
  await ok('POST', '/api/v1/admin/wallet/credit', admin, { user_id: owner.userId, currency: 'UT', amount: '100.00' });
  const capability = await ok<{ id: string }>('POST', '/api/v1/capabilities', owner.headers, {
    title: 'Contract translation', description: 'Translate contracts into Chinese', category: 'translation', capability_type: 'service', pricing_model: 'per_query', price_ut: '1.00', callback_url: 'https://seller.example/callback',
  });
  const offered = await ok<{ id: string }>('POST', '/api/v1/capabilities', counterparty.headers, {
    title: 'An hour of legal translation', description: 'Translate a contract into Chinese', category: 'translation', capability_type: 'service', pricing_model: 'per_hour', price_ut: '1.00',
  });
  const demand = await ok<{ id: string }>('POST', '/api/v1/demands', owner.headers, { description: 'Translate a contract into Chinese' });
  const bought = await ok<{ id: string }>('POST', '/api/v1/transactions', { ...owner.headers, 'Idempotency-Key': randomUUID() }, { capability_id: offered.id, booked_hours: 1 });
  await ok('POST', `/api/v1/transactions/${bought.id}/freeze`, owner.headers, {});
  const ownedKey = await approvedKey(ownerAsHuman);
  const revoked = await approvedKey(ownerAsHuman);
  await ok('DELETE', `/api/v1/auth/api-keys/${revoked.id}`, ownerAsHuman);
  const device = await ok<{ device_code: string; user_code: string }>('POST', '/api/v1/auth/device-auth', {}, { agent_platform_type: 'claude_code' });
  return {
    callers: {
      owner: owner.headers, counterparty: counterparty.headers, other_user: other.headers, other_space: ownerAsHuman,
      anonymous: {},
      mixed_credentials: { ...owner.headers, ...ownerAsHuman },
      revoked_key: { 'X-Api-Key': revoked.api_key, 'X-Platform-User-Id': owner.userId },
      expired_token: { Authorization: `Bearer ${jwt.sign(owner.userId, -60).token}` },
      admin_token: admin,
    },
    ids: { cap_id: capability.id, demand_id: demand.id, tx_id: bought.id, id: ownedKey.id, otherCapabilityId: offered.id, ownerId: owner.userId },
    userCode: device.user_code,
    deviceCode: device.device_code,
  };
}

/** A request each route accepts as well-formed in that world, so only access can refuse it. */
function requestOf(spec: RouteSpec, world: World): { path: string; body?: unknown; headers?: Headers; query?: string } {
  const path = spec.path.replace(/:([a-z_]+)/g, (_, name: keyof World['ids']) => world.ids[name]);
  const capability = { title: 'Logo design', description: 'Logos for shops', category: 'design', capability_type: 'service', pricing_model: 'per_hour', price_ut: '2.00' };
  const bodies: Record<string, unknown> = {
    'POST /api/v1/auth/signup': { email: `matrix-${randomUUID()}@example.com`, password: 'correct-horse-42' },
    'POST /api/v1/auth/login': { email: person.email, password: person.password },
    'POST /api/v1/auth/device-auth': { agent_platform_type: 'custom_mcp' },
    'POST /api/v1/auth/device-auth/poll': { device_code: world.deviceCode },
    'POST /api/v1/auth/device-auth/lookup': { user_code: world.userCode },
    'POST /api/v1/auth/device-auth/confirm': { user_code: world.userCode, decision: 'deny' },
    'POST /api/v1/admin/api-keys': { agent_platform_type: 'custom_mcp' },
    'POST /api/v1/admin/api-keys/:id/links': { user_id: world.ids.ownerId },
    'POST /api/v1/admin/transactions/:tx_id/resolve': { outcome: 'refund' },
    'POST /api/v1/admin/wallet/credit': { user_id: world.ids.ownerId, currency: 'UT', amount: '1.00' },
    'POST /api/v1/capabilities': capability,
    'POST /api/v1/capabilities/batch': { items: [capability] },
    'PUT /api/v1/capabilities/:cap_id': { title: 'A new title' },
    'POST /api/v1/capabilities/:cap_id/discover-demands': {},
    'POST /api/v1/capabilities/:cap_id/invoke': { input: {} },
    'POST /api/v1/demands': { description: 'Design a logo for a bakery' },
    'POST /api/v1/demands/evaluate-alignment': { demand_id: world.ids.demand_id, capability_ids: [world.ids.otherCapabilityId] },
    'POST /api/v1/capabilities/match': { demand_id: world.ids.demand_id },
    'POST /api/v1/transactions': { capability_id: world.ids.otherCapabilityId, booked_hours: 1 },
    'POST /api/v1/transactions/:tx_id/deliver': { result_payload: { done: true } },
  };
  const key = routeKey(spec);
  const body = key in bodies ? bodies[key] : spec.method === 'get' || spec.method === 'delete' ? undefined : {};
  const query = key === 'GET /api/v1/pricing/suggestion' ? '?category=translation' : '';
  return { path: `${path}${query}`, body, headers: spec.idempotent ? { 'Idempotency-Key': randomUUID() } : {} };
}

const deniedCodes = new Set([4010, 4011, 4030, 4040]);
const statusOf: Record<Exclude<Outcome, 'allow'>, number> = { 4010: 401, 4011: 400, 4030: 403, 4040: 404 };

function expectOutcome(answer: { status: number; code: number | null }, expected: Outcome, what: string) {
  if (expected === 'allow') {
    expect.soft(deniedCodes.has(answer.code ?? 0), `${what}: allowed, answered ${JSON.stringify(answer)}`).toBe(false);
    expect.soft(answer.status, what).toBeLessThan(500);
  } else {
    expect.soft(answer, what).toEqual({ status: statusOf[expected], code: expected });
  }
}

describe('the access matrix', () => {
  it('has a row for every route and names no route that is not there; a route added without a row is named', () => {
    const routes = allRoutes(test.runtime.engine);
    expect(routesWithoutRow(routes)).toEqual([]);
    const keys = new Set(routes.map(routeKey));
    expect(Object.keys(routeAccess).filter((key) => !keys.has(key))).toEqual([]);
    const added = { method: 'post' as const, path: '/api/v1/brand-new' };
    expect(routesWithoutRow([...routes, added])).toEqual(['POST /api/v1/brand-new']);
  });

  const checked = () => allRoutes(test.runtime.engine).filter((spec) => routeAccess[routeKey(spec)]!.resource !== 'protocol');
  it('answers every route as its row says, for every kind of caller', async () => {
    for (const spec of checked()) {
      const key = routeKey(spec);
      const row = routeAccess[key]!;
      const world = await newWorld();
      const credentialKinds = Object.entries(credentialOutcomes[spec.auth]) as [CredentialKind, Outcome][];
      const parties = Object.entries(row.parties) as [Party, Outcome][];
      // The refusals first: an allowed call may change the world (a cancel, a revoked key).
      const calls = [...credentialKinds, ...parties].sort(([, left], [, right]) => Number(left === 'allow') - Number(right === 'allow'));
      for (const [caller, expected] of calls) {
        const request = requestOf(spec, world);
        const answer = await call(spec.method, request.path, { ...world.callers[caller], ...request.headers }, request.body);
        expectOutcome(answer, expected, `${key} as ${caller}`);
      }
    }
  }, 600_000);
});
