import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket } from '../helpers/market.ts';

/** The A2A protocol surface: ListTasks, the hybrid shapes, SSE error frames and the agent card. */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PUBLIC_BASE_URL: 'https://market.example' });
});
afterAll(() => test.close());

const rpc = (body: unknown, headers: Record<string, string>) =>
  test.http.post('/api/v1/rpc').set(headers).set('Content-Type', 'application/json').send(JSON.stringify(body));
const call = async (actor: Actor, method: string, params: unknown) => (await rpc({ jsonrpc: '2.0', id: 1, method, params }, actor.headers).expect(200)).body;

describe('ListTasks', () => {
  // Four tasks, changed in this order: A submitted (frozen), B working (accepted), C working
  // (disputed, with a delivered result), D canceled; then A is accepted, so it changed last.
  let market: Awaited<ReturnType<typeof agentMarket>>;
  const ids: Record<'a' | 'b' | 'c' | 'd', string> = { a: '', b: '', c: '', d: '' };
  let contextOfB = '';
  let changedWhenCWasDisputed = '';
  beforeAll(async () => {
    market = await agentMarket(test);
    const { buyer, seller, capability } = market;
    for (const key of ['a', 'b', 'c', 'd'] as const) {
      const sent = await call(buyer, 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
      });
      ids[key] = sent.result.task.id;
      if (key === 'b') contextOfB = sent.result.task.contextId;
    }
    await act(test, seller, ids.b, 'accept').expect(200);
    await act(test, seller, ids.c, 'accept').expect(200);
    await act(test, seller, ids.c, 'deliver', { result_payload: { summary: 'done' } }).expect(200);
    await act(test, buyer, ids.c, 'dispute', { reason: 'incomplete' }).expect(200);
    changedWhenCWasDisputed = (await call(buyer, 'GetTask', { id: ids.c })).result.status.timestamp;
    await act(test, buyer, ids.d, 'cancel').expect(200);
    await act(test, seller, ids.a, 'accept').expect(200);
  });

  const list = async (params: Record<string, unknown>) => (await call(market.buyer, 'ListTasks', params)).result;
  const idsOf = (result: { tasks: { id: string }[] }) => result.tasks.map((task) => task.id);

  it('lists newest status change first, with pageSize the count of this page and an empty token at the end', async () => {
    const all = await list({});
    expect(idsOf(all)).toEqual([ids.a, ids.d, ids.c, ids.b]);
    expect(all).toMatchObject({ pageSize: 4, totalSize: 4, nextPageToken: '' });
    const first = await list({ pageSize: 3 });
    expect(first).toMatchObject({ pageSize: 3, totalSize: 4 });
    const second = await list({ pageSize: 3, pageToken: first.nextPageToken });
    expect(idsOf(second)).toEqual([ids.b]);
    expect(second).toMatchObject({ pageSize: 1, nextPageToken: '' });
  });

  it('filters by a state that names several marketplace statuses, by its enum number, and by context', async () => {
    const working = await list({ status: 'TASK_STATE_WORKING' });
    expect(idsOf(working)).toEqual([ids.a, ids.c, ids.b]);
    expect(working.tasks.map((task: { metadata: { marketplace: { status: string } } }) => task.metadata.marketplace.status)).toEqual([
      'accepted',
      'disputed',
      'accepted',
    ]);
    expect(idsOf(await list({ status: 2 }))).toEqual([ids.a, ids.c, ids.b]);
    expect(idsOf(await list({ status: 'TASK_STATE_CANCELED' }))).toEqual([ids.d]);
    expect(await list({ status: 'TASK_STATE_AUTH_REQUIRED' })).toMatchObject({ tasks: [], totalSize: 0, pageSize: 0 });
    expect(idsOf(await list({ status: 'TASK_STATE_UNSPECIFIED' }))).toHaveLength(4);
    expect(idsOf(await list({ contextId: contextOfB, status: 'TASK_STATE_WORKING' }))).toEqual([ids.b]);
    expect(await list({ contextId: 'pagination-test-1712345678901' })).toMatchObject({ tasks: [], totalSize: 0, nextPageToken: '' });
  });

  it('keeps tasks whose status changed at or after statusTimestampAfter', async () => {
    expect(idsOf(await list({ statusTimestampAfter: changedWhenCWasDisputed }))).toEqual([ids.a, ids.d, ids.c]);
    const withOffset = new Date(changedWhenCWasDisputed).toISOString().replace('Z', '+00:00');
    expect(idsOf(await list({ statusTimestampAfter: withOffset }))).toEqual([ids.a, ids.d, ids.c]);
  });

  it('leaves artifacts out unless includeArtifacts, and accepts historyLength', async () => {
    const plain = (await list({ status: 'TASK_STATE_WORKING' })).tasks.find((task: { id: string }) => task.id === ids.c);
    expect(plain).not.toHaveProperty('artifacts');
    const full = (await list({ status: 'TASK_STATE_WORKING', includeArtifacts: true, historyLength: 3 })).tasks.find(
      (task: { id: string }) => task.id === ids.c,
    );
    expect(full.artifacts[0].parts[0].data).toEqual({ summary: 'done' });
    expect((await list({ historyLength: 0 })).tasks).toHaveLength(4);
  });

  it('answers invalid values with -32602 naming the parameter', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ status: 'INVALID_STATUS' }, 'params.status'],
      [{ status: 'working' }, 'params.status'],
      [{ status: 9 }, 'params.status'],
      [{ statusTimestampAfter: '-1' }, 'params.statusTimestampAfter'],
      [{ statusTimestampAfter: '2024-13-45T00:00:00Z' }, 'params.statusTimestampAfter'],
      [{ statusTimestampAfter: '2024-03-15T10:00:00' }, 'params.statusTimestampAfter'],
      [{ pageSize: 0 }, 'params.pageSize'],
      [{ pageSize: 101 }, 'params.pageSize'],
      [{ pageSize: -1 }, 'params.pageSize'],
      [{ pageToken: 'invalid-token-xyz' }, 'params.pageToken'],
      [{ historyLength: -1 }, 'params.historyLength'],
    ];
    for (const [params, path] of cases) {
      const { error } = await call(market.buyer, 'ListTasks', params);
      expect(error, JSON.stringify(params)).toMatchObject({ code: -32602, data: { code: 4000 } });
      expect(
        error.data.data.errors.map((entry: { path: string }) => entry.path),
        JSON.stringify(params),
      ).toContain(path);
    }
  });

  it('lists nothing of another user, and refuses a caller without credentials', async () => {
    const stranger = await createAgent(test);
    expect((await call(stranger, 'ListTasks', { status: 'TASK_STATE_WORKING' })).result).toMatchObject({ tasks: [], totalSize: 0 });
    const anonymous = await rpc({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }, {}).expect(401);
    expect(anonymous.body.error).toMatchObject({ code: -32110, data: { code: 4010 } });
  });
});

describe('ListTasks with conversations', () => {
  // Three conversations of one buyer, in this order: X nothing matched (working), Y candidates
  // (input-required, context "chat-y"), Z picked a candidate (its transaction, submitted).
  let market: Awaited<ReturnType<typeof agentMarket>>;
  const ids: Record<'x' | 'y' | 'z' | 'transaction', string> = { x: '', y: '', z: '', transaction: '' };
  const text = (words: string, extra: Record<string, unknown> = {}) => ({
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: words }], ...extra },
  });
  beforeAll(async () => {
    const topic = `topic${randomUUID().slice(0, 8)}`;
    market = await agentMarket(test, '100.00', { title: `Summarize ${topic} reports` });
    const { buyer } = market;
    ids.x = (await call(buyer, 'SendMessage', text(`an elegy about ${randomUUID()}`))).result.task.id;
    ids.y = (await call(buyer, 'SendMessage', text(`${topic} reports summarized`, { contextId: 'chat-y' }))).result.task.id;
    ids.z = (await call(buyer, 'SendMessage', text(`summaries of ${topic} reports`))).result.task.id;
    const picked = (await call(buyer, 'SendMessage', text(market.capability.id, { taskId: ids.z }))).result.task;
    ids.transaction = picked.metadata.marketplace.transaction_id;
  });

  const list = async (params: Record<string, unknown>, actor = market.buyer) => (await call(actor, 'ListTasks', params)).result;
  const idsOf = (result: { tasks: { id: string }[] }) => result.tasks.map((task) => task.id);

  it('lists each conversation once under its own id, a bought one showing its transaction, newest change first, in pages', async () => {
    const all = await list({});
    expect(idsOf(all)).toEqual([ids.z, ids.y, ids.x]);
    expect(all.tasks.map((task: { status: { state: string } }) => task.status.state)).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
    ]);
    expect(all.tasks[0].metadata.marketplace).toMatchObject({ conversation_id: ids.z, transaction_id: ids.transaction, status: 'frozen' });
    expect(all).toMatchObject({ totalSize: 3, pageSize: 3, nextPageToken: '' });
    const first = await list({ pageSize: 2 });
    expect(idsOf(first)).toEqual([ids.z, ids.y]);
    expect(idsOf(await list({ pageSize: 2, pageToken: first.nextPageToken }))).toEqual([ids.x]);
  });

  it("filters conversations by their state, context and time; the seller lists the purchase under the transaction's id", async () => {
    expect(idsOf(await list({ status: 'TASK_STATE_WORKING' }))).toEqual([ids.x]);
    expect(idsOf(await list({ status: 'TASK_STATE_INPUT_REQUIRED' }))).toEqual([ids.y]);
    expect(idsOf(await list({ status: 'TASK_STATE_SUBMITTED' }))).toEqual([ids.z]);
    const inContext = await list({ contextId: 'chat-y', historyLength: 1 });
    expect(inContext).toMatchObject({ totalSize: 1, tasks: [{ id: ids.y, contextId: 'chat-y', history: [{ role: 'ROLE_AGENT' }] }] });
    const sinceY = (await call(market.buyer, 'GetTask', { id: ids.y })).result.status.timestamp;
    expect(idsOf(await list({ statusTimestampAfter: sinceY }))).toEqual([ids.z, ids.y]);
    expect(await list({}, market.seller)).toMatchObject({ totalSize: 1, tasks: [{ id: ids.transaction, status: { state: 'TASK_STATE_SUBMITTED' } }] });
    await call(market.buyer, 'CancelTask', { id: ids.x });
    expect(idsOf(await list({ status: 'TASK_STATE_CANCELED' }))).toEqual([ids.x]);
    expect(idsOf(await list({ status: 'TASK_STATE_WORKING' }))).toEqual([]);
  });
});

describe('hybrid shapes', () => {
  it('gives every part type beside kind when no A2A-Version is sent, and the v0.3 shape when 0.3 is', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const sent = await call(buyer, 'message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
    });
    const id = sent.result.id;
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: { pages: 3 } }).expect(200);
    const got = (await call(buyer, 'tasks/get', { id })).result;
    expect(got.status.message.parts[0]).toMatchObject({ kind: 'text', type: 'text' });
    expect(got.artifacts[0].parts[0]).toEqual({ kind: 'data', type: 'data', data: { pages: 3 } });
    const resubscribed = await rpc({ jsonrpc: '2.0', id: 3, method: 'tasks/resubscribe', params: { id } }, buyer.headers).expect(200);
    const first = JSON.parse(/^data: (.*)$/m.exec(resubscribed.text)![1]!).result;
    expect(first.status.message.parts[0]).toMatchObject({ kind: 'text', type: 'text' });
    const v03 = (await rpc({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id } }, { ...buyer.headers, 'A2A-Version': '0.3' }).expect(200)).body.result;
    expect(v03.status.message.parts[0]).not.toHaveProperty('type');
    expect(v03.artifacts[0].parts[0]).toEqual({ kind: 'data', data: { pages: 3 } });
  });
});

describe('streaming methods that fail before their stream starts', () => {
  const frameOf = (text: string) => {
    expect(text).toMatch(/^event: error$/m);
    return JSON.parse(/^data: (.*)$/m.exec(text)![1]!);
  };

  it('answer one SSE error frame for every streaming method name, and JSON to A2A-Version 1.0 callers', async () => {
    const caller = await createAgent(test);
    const unknown = randomUUID();
    const cases: [string, unknown, number][] = [
      ['tasks/sendSubscribe', { id: randomUUID(), message: { role: 'user', parts: [] } }, -32602],
      ['tasks/resubscribe', { id: unknown }, -32001],
      [
        'message/stream',
        { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: unknown } }] } },
        -32001,
      ],
      ['SendStreamingMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: 'not-a-uuid' } }] } }, -32602],
      ['SubscribeToTask', { id: unknown }, -32001],
    ];
    for (const [method, params, code] of cases) {
      const response = await rpc({ jsonrpc: '2.0', id: method, method, params }, { ...caller.headers, Accept: 'text/event-stream' }).expect(200);
      expect(response.headers['content-type'], method).toMatch(/^text\/event-stream/);
      expect(frameOf(response.text), method).toMatchObject({ jsonrpc: '2.0', id: method, error: { code } });
    }
    const v10 = await rpc({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id: unknown } }, { ...caller.headers, 'A2A-Version': '1.0' }).expect(
      200,
    );
    expect(v10.headers['content-type']).toMatch(/^application\/json/);
    expect(v10.body.error).toMatchObject({ code: -32001 });
  });

  it('keep failures of the whole exchange as JSON under their HTTP status', async () => {
    const response = await rpc(
      { jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: randomUUID() } },
      { 'X-Api-Key': 'mk_wrong', 'X-Platform-User-Id': randomUUID() },
    ).expect(401);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body.error).toMatchObject({ code: -32110, data: { code: 4010 } });
  });
});

describe('agent card', () => {
  const card = async (headers: Record<string, string> = {}, path = '/.well-known/agent-card.json') => {
    const response = await test.http.get(path).set(headers).expect(200);
    expect(response.headers.vary).toMatch(/A2A-Version/i);
    return response.body;
  };

  it('gives A2A-Version 1.0 callers exactly the v1.0 card', async () => {
    const v10 = await card({ 'A2A-Version': '1.0' });
    for (const field of ['url', 'protocolVersion', 'preferredTransport', 'additionalInterfaces', 'security', 'authentication'])
      expect(v10).not.toHaveProperty(field);
    expect(v10.securitySchemes).toEqual({
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-Api-Key', description: expect.any(String) } },
      platformUserId: { apiKeySecurityScheme: { location: 'header', name: 'X-Platform-User-Id', description: expect.any(String) } },
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description: expect.any(String) } },
    });
    expect(v10.supportedInterfaces[0]).toEqual({ url: 'https://market.example/api/v1/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
  });

  it('adds the fields v0.x clients locate the endpoint by when no version is sent, keeping the v1.0 schemes', async () => {
    const plain = await card();
    expect(plain).toMatchObject({ url: 'https://market.example/api/v1/rpc', preferredTransport: 'JSONRPC', protocolVersion: '0.3.0' });
    // One key per scheme, the v1.0 form: the conformance kit checks it (test_invalid_authentication
    // failed when v0.3's flat fields rode beside it). A v0.3 reader asks with A2A-Version: 0.3.
    expect(plain.securitySchemes).toEqual((await card({ 'A2A-Version': '1.0' })).securitySchemes);
    expect(plain).not.toHaveProperty('security');
    expect(plain).not.toHaveProperty('authentication');
    expect(await card({}, '/api/v1/rpc/.well-known/agent-card.json')).toEqual(plain);
    expect(await card({}, '/api/v1/.well-known/agent-card.json')).toEqual(plain);
    // The legacy path is where v0.1 clients look, with no header: they also get v0.1's authentication.
    const legacy = { ...plain, authentication: { schemes: ['apiKey', 'bearer'] } };
    expect(await card({}, '/api/v1/rpc/.well-known/agent.json')).toEqual(legacy);
    expect(await card({}, '/.well-known/agent.json')).toEqual(legacy);
  });

  it('gives A2A-Version 0.x callers the v0.3 flat schemes with security and v0.1 authentication', async () => {
    const v03 = await card({ 'A2A-Version': '0.3' }, '/.well-known/agent.json');
    expect(v03.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'X-Api-Key', description: expect.any(String) });
    expect(v03.security).toEqual([{ apiKey: [], platformUserId: [] }, { bearer: [] }]);
    expect(v03.authentication).toEqual({ schemes: ['apiKey', 'bearer'] });
    expect(v03).not.toHaveProperty('supportedInterfaces');
  });
});
