import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CredentialKind,
  type Outcome,
  type Party,
  type RouteAccess,
  credentialOutcomes,
  mcpCredentialOutcomes,
  mcpToolAccess,
  routeAccess,
  routeKey,
  routesWithoutRow,
  rpcMethodAccess,
} from '../../rest/access-matrix.ts';
import { mcpTools } from '../../mcp/tools.ts';
import { createMethods } from '../../rpc/methods.ts';
import { marketplaceCodeOf } from '../helpers/a2a.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { pendingSignIn } from '../helpers/oauth.ts';
import type { RouteSpec } from '../../rest/route.ts';
import { allRoutes } from '../../src/app.ts';
import { rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp, testAdminToken } from '../helpers/app.ts';

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
    method: method.toUpperCase(),
    signal: abort.signal,
    headers: { ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    abort.abort();
    return { status: response.status, code: null };
  }
  const text = await response.text();
  // The envelope's code, or, from /mcp and /api/v1/rpc, the one inside a JSON-RPC error's data.
  const parsed = text.startsWith('{') ? (JSON.parse(text) as { code?: unknown; error?: { data?: { code?: unknown } } }) : {};
  const code = parsed.code ?? parsed.error?.data?.code;
  return { status: response.status, code: typeof code === 'number' ? code : null };
}

async function ok<T>(method: string, path: string, headers: Headers, body?: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await response.json()) as { code: number; data: T };
  if (answer.code !== 0) throw new Error(`${method} ${path}: ${JSON.stringify(answer)}`);
  return answer.data;
}

const skillBody = { name: 'Contract translation', description: 'English to Chinese contracts', category: 'translation' };
const taskBody = { title: 'Translate a contract', description: 'Ten pages, English into Chinese', mode: 'online' };
const webhookBody = { url: 'https://receiver.example/hooks', event_types: ['*'] };
const extractBody = { content: 'I translate contracts from English into Chinese. Localization of websites is my other job.' };

interface World {
  callers: Record<Party | CredentialKind, Headers>;
  ids: {
    cap_id: string;
    demand_id: string;
    tx_id: string;
    id: string;
    skill_id: string;
    candidate_id: string;
    task_id: string;
    app_id: string;
    counterpartySkillId: string;
    push_id: string;
    webhook_id: string;
    otherCapabilityId: string;
    ownerId: string;
    request_id: string;
  };
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
    title: 'Contract translation',
    description: 'Translate contracts into Chinese',
    category: 'translation',
    capability_type: 'service',
    pricing_model: 'per_query',
    price_ut: '1.00',
    callback_url: 'https://seller.example/callback',
  });
  const offered = await ok<{ id: string }>('POST', '/api/v1/capabilities', counterparty.headers, {
    title: 'An hour of legal translation',
    description: 'Translate a contract into Chinese',
    category: 'translation',
    capability_type: 'service',
    pricing_model: 'per_hour',
    price_ut: '1.00',
  });
  const demand = await ok<{ id: string }>('POST', '/api/v1/demands', owner.headers, { description: 'Translate a contract into Chinese' });
  const skill = await ok<{ id: string }>('POST', '/api/v1/skills/', owner.headers, skillBody);
  const extracted = await ok<{ candidates: { id: string }[] }>('POST', '/api/v1/skills/extract', owner.headers, extractBody);
  const task = await ok<{ id: string }>('POST', '/api/v1/tasks/', owner.headers, taskBody);
  const counterpartySkill = await ok<{ id: string }>('POST', '/api/v1/skills/', counterparty.headers, skillBody);
  const application = await ok<{ id: string }>('POST', `/api/v1/tasks/${task.id}/applications`, counterparty.headers, { skill_id: counterpartySkill.id });
  const pushed = await ok<{ id: string }>('POST', `/api/v1/tasks/${task.id}/push-skill`, owner.headers, { skill_id: counterpartySkill.id });
  const webhook = await ok<{ id: string }>('POST', '/api/v1/webhooks', owner.headers, webhookBody);
  const bought = await ok<{ id: string }>(
    'POST',
    '/api/v1/transactions',
    { ...owner.headers, 'Idempotency-Key': randomUUID() },
    { capability_id: offered.id, booked_hours: 1 },
  );
  await ok('POST', `/api/v1/transactions/${bought.id}/freeze`, owner.headers, {});
  const ownedKey = await approvedKey(ownerAsHuman);
  const revoked = await approvedKey(ownerAsHuman);
  await ok('DELETE', `/api/v1/auth/api-keys/${revoked.id}`, ownerAsHuman);
  const device = await ok<{ device_code: string; user_code: string }>('POST', '/api/v1/auth/device-auth', {}, { agent_platform_type: 'claude_code' });
  const signIn = await pendingSignIn(base, test.runtime.engine.oauth.resource);
  return {
    callers: {
      owner: owner.headers,
      counterparty: counterparty.headers,
      other_user: other.headers,
      other_space: ownerAsHuman,
      anonymous: {},
      mixed_credentials: { ...owner.headers, ...ownerAsHuman },
      revoked_key: { 'X-Api-Key': revoked.api_key, 'X-Platform-User-Id': owner.userId },
      expired_token: { Authorization: `Bearer ${jwt.sign(owner.userId, -60).token}` },
      admin_token: admin,
    },
    ids: {
      cap_id: capability.id,
      demand_id: demand.id,
      tx_id: bought.id,
      id: ownedKey.id,
      skill_id: skill.id,
      candidate_id: extracted.candidates[0]!.id,
      task_id: task.id,
      app_id: application.id,
      counterpartySkillId: counterpartySkill.id,
      push_id: pushed.id,
      webhook_id: webhook.id,
      otherCapabilityId: offered.id,
      ownerId: owner.userId,
      request_id: signIn.requestId,
    },
    userCode: device.user_code,
    deviceCode: device.device_code,
  };
}

/** A request each route accepts as well-formed in that world, so only access can refuse it. */
function requestOf(spec: RouteSpec, world: World): { path: string; body?: unknown; headers?: Headers; query?: string } {
  const path = spec.path.replace(/:([a-z_]+)/g, (_, name: keyof World['ids']) => world.ids[name]);
  const capability = {
    title: 'Logo design',
    description: 'Logos for shops',
    category: 'design',
    capability_type: 'service',
    pricing_model: 'per_hour',
    price_ut: '2.00',
  };
  const bodies: Record<string, unknown> = {
    'POST /api/v1/auth/signup': { email: `matrix-${randomUUID()}@example.com`, password: 'correct-horse-42' },
    'POST /api/v1/auth/login': { email: person.email, password: person.password },
    'POST /api/v1/auth/device-auth': { agent_platform_type: 'custom_mcp' },
    'POST /api/v1/auth/device-auth/poll': { device_code: world.deviceCode },
    'POST /api/v1/auth/device-auth/lookup': { user_code: world.userCode },
    'POST /api/v1/auth/device-auth/confirm': { user_code: world.userCode, decision: 'deny' },
    'POST /api/v1/auth/oauth/requests/:request_id/decision': { decision: 'deny' },
    'PUT /api/v1/auth/api-keys/:id/budget': { per_purchase_max: '1.00', daily_max: '5.00' },
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
    'POST /api/v1/skills/': skillBody,
    'POST /api/v1/skills': skillBody,
    'PUT /api/v1/skills/:skill_id': { name: 'A new name' },
    'POST /api/v1/skills/extract': extractBody,
    'POST /api/v1/skills/ai-create': { prompt: 'I translate contracts' },
    'POST /api/v1/tasks/': taskBody,
    'POST /api/v1/tasks': taskBody,
    'PUT /api/v1/tasks/:task_id': { title: 'A new title' },
    'POST /api/v1/tasks/:task_id/publish-draft': { delivery_hours: 2 },
    'POST /api/v1/tasks/:task_id/reuse': { delivery_hours: 2, bounty_amount: null },
    'POST /api/v1/tasks/:task_id/applications': { skill_id: world.ids.counterpartySkillId, message: 'I can do it' },
    'POST /api/v1/tasks/:task_id/rating': { score: 5 },
    'POST /api/v1/tasks/:task_id/push-skill': { skill_id: world.ids.counterpartySkillId },
    'POST /api/v1/tasks/:task_id/select-skill': { skill_id: world.ids.counterpartySkillId, price: '1.00' },
    'POST /api/v1/tasks/pushes/:push_id/respond': { decision: 'decline' },
    'POST /api/v1/tasks/ai-create': { prompt: 'Translate my contract into Chinese' },
    'POST /api/v1/tasks/description-optimize': { description: 'Translate my contract' },
    'POST /api/v1/webhooks': webhookBody,
  };
  const key = routeKey(spec);
  const body = key in bodies ? bodies[key] : spec.method === 'get' || spec.method === 'delete' ? undefined : {};
  const query = key === 'GET /api/v1/pricing/suggestion' ? '?category=translation' : '';
  return { path: `${path}${query}`, body, headers: spec.idempotent ? { 'Idempotency-Key': randomUUID() } : {} };
}

const deniedCodes = new Set([4010, 4011, 4030, 4040]);
const statusOf: Record<Exclude<Outcome, 'allow'>, number> = { 4010: 401, 4011: 400, 4012: 403, 4030: 403, 4040: 404 };

function expectOutcome(answer: { status: number; code: number | null }, expected: Outcome, what: string) {
  if (expected === 'allow') {
    expect.soft(deniedCodes.has(answer.code ?? 0), `${what}: allowed, answered ${JSON.stringify(answer)}`).toBe(false);
    expect.soft(answer.status, what).toBeLessThan(500);
  } else {
    expect.soft(answer, what).toEqual({ status: statusOf[expected], code: expected });
  }
}

describe('the access matrix', () => {
  it('has a row for every route and names no route that is not there; a route added without a row is named; the open routes are the rows that say so', () => {
    const routes = allRoutes(test.runtime.engine);
    expect(routesWithoutRow(routes)).toEqual([]);
    const keys = new Set(routes.map(routeKey));
    expect(Object.keys(routeAccess).filter((key) => !keys.has(key))).toEqual([]);
    const added = { method: 'post' as const, path: '/api/v1/brand-new' };
    expect(routesWithoutRow([...routes, added])).toEqual(['POST /api/v1/brand-new']);
    // Who needs no credentials is said by the rows, apart from the declarations it checks.
    const declaredOpen = routes.filter((spec) => spec.auth === 'none' && routeAccess[routeKey(spec)]?.resource !== 'protocol').map(routeKey);
    expect(declaredOpen.sort()).toEqual(
      Object.keys(routeAccess)
        .filter((key) => routeAccess[key]!.open)
        .sort(),
    );
    if (process.env.ACCESS_MATRIX_RECORD)
      writeFileSync(process.env.ACCESS_MATRIX_RECORD, JSON.stringify(Object.fromEntries(routes.map((spec) => [routeKey(spec), spec.auth]))));
  });

  /**
   * Mutation testing of the declarations (test/mutation/declarations.mjs) runs this file once with
   * ACCESS_MATRIX_RECORD to record each route's declared `auth`, then once per changed declaration
   * with ACCESS_MATRIX_DECLARED naming that record, to check only the routes declared otherwise.
   */
  const declaredBefore = process.env.ACCESS_MATRIX_DECLARED
    ? (JSON.parse(readFileSync(process.env.ACCESS_MATRIX_DECLARED, 'utf8')) as Record<string, string>)
    : null;
  const checked = () =>
    allRoutes(test.runtime.engine)
      .filter((spec) => routeAccess[routeKey(spec)]!.resource !== 'protocol')
      .filter((spec) => declaredBefore === null || declaredBefore[routeKey(spec)] !== spec.auth);
  it('answers every route as its row says, for every kind of caller', async () => {
    for (const spec of checked()) {
      const key = routeKey(spec);
      const row = routeAccess[key]!;
      const world = await newWorld();
      const credentialKinds = Object.entries(credentialOutcomes[row.open ? 'none' : spec.auth]) as [CredentialKind, Outcome][];
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

/** The calls of one row, refusals first: an allowed call may change the world. */
function callsOf(row: RouteAccess, credentials: Record<CredentialKind, Outcome> | null) {
  const credentialKinds = credentials ? (Object.entries(credentials) as [CredentialKind, Outcome][]) : [];
  return [...credentialKinds, ...(Object.entries(row.parties) as [Party, Outcome][])].sort(
    ([, left], [, right]) => Number(left === 'allow') - Number(right === 'allow'),
  );
}

/** Params each method accepts as well-formed in that world: a purchase of the counterparty's capability, or the bought task. */
function rpcParamsOf(method: string, world: World): unknown {
  const capability_id = world.ids.otherCapabilityId;
  const messageId = randomUUID();
  const sends: Record<string, unknown> = {
    'tasks/send': { id: `matrix-${randomUUID()}`, sessionId: randomUUID(), message: { role: 'user', parts: [{ type: 'data', data: { capability_id } }] } },
    'message/send': { message: { kind: 'message', messageId, role: 'user', parts: [{ kind: 'data', data: { capability_id } }] } },
    SendMessage: { message: { messageId, role: 'ROLE_USER', parts: [{ data: { capability_id } }] } },
  };
  sends['tasks/sendSubscribe'] = sends['tasks/send'];
  sends['message/stream'] = sends['message/send'];
  sends.SendStreamingMessage = sends.SendMessage;
  if (method in sends) return sends[method];
  if (method === 'ListTasks') return {};
  if (method === 'tasks/unsubscribe') return { subscription: randomUUID() };
  const taskId = world.ids.tx_id;
  const url = 'https://receiver.example/a2a';
  const pushes: Record<string, unknown> = {
    'tasks/pushNotification/set': { id: taskId, pushNotificationConfig: { url } },
    'tasks/pushNotificationConfig/set': { taskId, pushNotificationConfig: { url } },
    'tasks/pushNotificationConfig/get': { id: taskId, pushNotificationConfigId: matrixConfigId },
    'tasks/pushNotificationConfig/delete': { id: taskId, pushNotificationConfigId: matrixConfigId },
    CreateTaskPushNotificationConfig: { taskId, url },
    GetTaskPushNotificationConfig: { taskId, id: matrixConfigId },
    ListTaskPushNotificationConfigs: { taskId },
    ListTaskPushNotificationConfig: { taskId },
    DeleteTaskPushNotificationConfig: { taskId, id: matrixConfigId },
  };
  return pushes[method] ?? { id: taskId };
}

/** The config each party of the world's transaction keeps, so that reading one is allowed to both. */
const matrixConfigId = 'matrix-config';
async function withPushConfigs(world: World) {
  for (const party of ['owner', 'counterparty'] as const) {
    const body = {
      jsonrpc: '2.0',
      id: 1,
      method: 'CreateTaskPushNotificationConfig',
      params: { taskId: world.ids.tx_id, id: matrixConfigId, url: 'https://receiver.example/a2a' },
    };
    const answer = (await (
      await fetch(`${base}/api/v1/rpc`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...world.callers[party] },
        body: JSON.stringify(body),
      })
    ).json()) as { result?: unknown };
    if (!answer.result) throw new Error(`the ${party}'s push config: ${JSON.stringify(answer)}`);
  }
}

/** The JSON of a stream's first `data:` line. */
async function firstEventOf(response: Response): Promise<unknown> {
  const reader = response.body!.getReader();
  let text = '';
  while (!/^data: .*\n/m.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  const line = /^data: (.*)$/m.exec(text)?.[1];
  return line ? JSON.parse(line) : null;
}

const deniedRpcCodes = new Set([-32110, -32111, -32130, -32001]);

describe('the access matrix of the JSON-RPC methods and the MCP tools', () => {
  it('has a row for every method and every tool, and none for what is not there', () => {
    expect(Object.keys(createMethods(test.runtime.engine)).sort()).toEqual(Object.keys(rpcMethodAccess).sort());
    expect(mcpTools.map((tool) => tool.name).sort()).toEqual(Object.keys(mcpToolAccess).sort());
  });

  it('answers every JSON-RPC method as its row says, for every kind of caller', async () => {
    for (const [method, row] of Object.entries(rpcMethodAccess)) {
      const world = await newWorld();
      if (/pushnotification/i.test(method)) await withPushConfigs(world);
      for (const [caller, expected] of callsOf(row, credentialOutcomes.user)) {
        const what = `${method} as ${caller}`;
        const abort = new AbortController();
        const response = await fetch(`${base}/api/v1/rpc`, {
          method: 'POST',
          signal: abort.signal,
          headers: { 'Content-Type': 'application/json', ...world.callers[caller] },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: rpcParamsOf(method, world) }),
        });
        // A streaming method answers in its stream: its first event is the task, or the refusal.
        const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
        const answer = (streamed ? await firstEventOf(response) : await response.json()) as { error?: { code: number; data?: { code?: number } } };
        abort.abort();
        if (expected === 'allow') {
          expect.soft(deniedRpcCodes.has(answer?.error?.code ?? 0), `${what}: allowed, answered ${JSON.stringify(answer?.error)}`).toBe(false);
          expect.soft(response.status, what).toBeLessThan(500);
        } else {
          expect.soft({ rpc: marketplaceCodeOf(answer?.error) }, `${what}: ${JSON.stringify(answer?.error)}`).toEqual({ rpc: expected });
        }
      }
    }
  }, 600_000);

  it('answers every MCP tool as its row says, for every party; credentials are refused before MCP starts', async () => {
    for (const [name, row] of Object.entries(mcpToolAccess)) {
      const world = await newWorld();
      const args: Record<string, Record<string, unknown>> = {
        get_capability: { cap_id: world.ids.cap_id },
        buy_capability: { capability_id: world.ids.otherCapabilityId, booked_hours: 1 },
        match_capabilities: { demand_id: world.ids.demand_id },
        create_demand: { description: 'Design a logo for a bakery' },
        get_transaction: { tx_id: world.ids.tx_id },
        get_skill: { skill_id: world.ids.skill_id },
        update_skill: { skill_id: world.ids.skill_id, name: 'Renamed' },
        delete_skill: { skill_id: world.ids.skill_id },
        create_skill: skillBody,
        publish_task: taskBody,
        apply_to_task: { task_id: world.ids.task_id, skill_id: world.ids.counterpartySkillId },
        accept_application: { task_id: world.ids.task_id, app_id: world.ids.app_id },
        list_task_applications: { task_id: world.ids.task_id },
        accept_transaction: { tx_id: world.ids.tx_id },
        deliver_transaction: { tx_id: world.ids.tx_id, result_payload: { done: true } },
        confirm_transaction: { tx_id: world.ids.tx_id },
      };
      for (const [party, expected] of callsOf(row, null)) {
        const client = await connectMcp(base, world.callers[party as Party]);
        const outcome = await callTool(client, name, args[name] ?? {});
        await client.close();
        const what = `${name} as ${party}: ${JSON.stringify(outcome.data).slice(0, 200)}`;
        if (expected === 'allow') expect.soft(outcome.isError && deniedCodes.has(outcome.data.code as number), what).toBe(false);
        else expect.soft({ isError: outcome.isError, code: outcome.data.code }, what).toEqual({ isError: true, code: expected });
      }
    }
    const world = await newWorld();
    for (const [caller, expected] of Object.entries(mcpCredentialOutcomes) as [CredentialKind, Outcome][]) {
      const answer = await call(
        'post',
        '/mcp',
        { ...world.callers[caller], Accept: 'application/json, text/event-stream' },
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'matrix', version: '1' } },
        },
      );
      expectOutcome(answer, expected, `POST /mcp as ${caller}`);
    }
  }, 600_000);
});
