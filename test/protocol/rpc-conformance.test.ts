import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance } from '../helpers/market.ts';

let test: TestApp;
let caller: Actor;
beforeAll(async () => {
  test = await startTestApp();
  caller = await createAgent(test);
});
afterAll(() => test.close());

const post = (body: unknown, headers: Record<string, string> = caller.headers) =>
  test.http
    .post('/api/v1/rpc')
    .set(headers)
    .set('Content-Type', 'application/json')
    .send(typeof body === 'string' ? body : JSON.stringify(body));

const call = (method: string, params?: unknown, id: unknown = 1) => post({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });

/** The JSON-RPC answer, read from the one SSE error frame when a streaming method failed early. */
const answerOf = (response: { headers: Record<string, string>; text: string; body: unknown }) =>
  /^text\/event-stream/.test(response.headers['content-type'] ?? '') ? JSON.parse(/^data: (.*)$/m.exec(response.text)![1]!) : response.body;

describe('JSON-RPC framing', () => {
  it('answers malformed JSON with -32700 and id null, HTTP 200', async () => {
    const response = await post('{"jsonrpc": "2.0", "method": ').expect(200);
    expect(response.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: { code: 4001 } } });
  });

  it('answers invalid requests with -32600, HTTP 200', async () => {
    const cases = [
      [{ jsonrpc: '1.0', id: 7, method: 'tasks/get', params: { id: 'x' } }, 7],
      [{ jsonrpc: '2.0', id: 8, params: {} }, 8],
      [{ jsonrpc: '2.0', id: { nested: true }, method: 'tasks/get', params: { id: 'x' } }, null],
      [{ jsonrpc: '2.0', id: 9, method: 'tasks/get', params: 'text' }, 9],
      ['just a string', null],
    ] as const;
    for (const [body, id] of cases) {
      const response = await post(JSON.stringify(body)).expect(200);
      expect(response.body, JSON.stringify(body)).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
    }
  });

  it('answers an unknown method with -32601, HTTP 200', async () => {
    const response = await call('tasks/teleport', { id: 'x' }, 'abc').expect(200);
    expect(response.body).toMatchObject({ id: 'abc', error: { code: -32601 } });
  });

  it('answers bad params of every method with -32602 and the 4000 details, HTTP 200', async () => {
    const message = { role: 'user', parts: [{ kind: 'text', text: 'hi' }] };
    const cases: [string, unknown][] = [
      ['tasks/send', { message: { role: 'user', parts: [{ type: 'text', text: 'no id' }] } }],
      ['tasks/send', { id: 'has space', message }],
      ['tasks/sendSubscribe', { id: randomUUID(), message: { role: 'user', parts: [] } }],
      ['message/send', { message }],
      ['message/stream', { message: { ...message, messageId: randomUUID(), role: 'agent' } }],
      ['tasks/get', {}],
      ['tasks/get', [1, 2]],
      ['tasks/cancel', { id: 42 }],
      ['tasks/resubscribe', undefined],
      ['SendMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: '   ' }] } }],
      ['SendStreamingMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: 'not-a-uuid' } }] } }],
      ['GetTask', { id: '' }],
      ['CancelTask', { name: 'tasks/1' }],
      ['SubscribeToTask', {}],
      ['ListTasks', { pageSize: 0 }],
      ['message/send', { message: { ...message, messageId: randomUUID(), contextId: 'x'.repeat(257) } }],
      ['message/send', { message: { ...message, messageId: 'm'.repeat(257) } }],
    ];
    for (const [method, params] of cases) {
      const answer = answerOf(await call(method, params, method).expect(200));
      expect(answer, `${method} ${JSON.stringify(params)}`).toMatchObject({ id: method, error: { code: -32602, data: { code: 4000 } } });
      expect(answer.error.data.data.errors.length).toBeGreaterThan(0);
    }
  });

  it('answers push notification methods for an unknown task with -32001 and file parts with -32005', async () => {
    for (const [method, params] of [
      ['tasks/pushNotification/set', { id: 'x', pushNotificationConfig: { url: 'https://receiver.example/a2a' } }],
      ['tasks/pushNotificationConfig/set', { taskId: 'x', pushNotificationConfig: { url: 'https://receiver.example/a2a' } }],
      ['CreateTaskPushNotificationConfig', { taskId: 'x', url: 'https://receiver.example/a2a' }],
    ] as const) {
      expect((await call(method, params).expect(200)).body.error.code).toBe(-32001);
    }
    const file = { kind: 'file', file: { uri: 'https://example.com/a.pdf' } };
    const response = await call('message/send', { message: { role: 'user', messageId: randomUUID(), parts: [file] } }).expect(200);
    expect(response.body.error.code).toBe(-32005);
  });
});

/** An A2A error as a v1.0 call gets it: ErrorInfo first, then the envelope the older generations carry in data. */
const inV10 = (error: { code: number; message: string; data: { code: number; message: string } }) => ({
  ...error,
  data: [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'TASK_NOT_FOUND',
      domain: 'a2a-protocol.org',
      metadata: { code: String(error.data.code), message: error.data.message },
    },
    { '@type': 'type.googleapis.com/google.protobuf.Struct', value: error.data },
  ],
});

describe('task errors', () => {
  it("answers a missing task and another user's task with the same -32001", async () => {
    const { buyer, capability } = await agentMarket(test);
    const theirs = (
      await test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capability.id }).expect(201)
    ).body.data;
    const missing = (await call('tasks/get', { id: randomUUID() }).expect(200)).body;
    const foreign = (await call('tasks/get', { id: theirs.id }).expect(200)).body;
    expect(missing.error).toMatchObject({ code: -32001, data: { code: 4040, message: 'not_found' } });
    expect(foreign.error).toEqual(missing.error);
    expect((await call('GetTask', { id: 'client-chosen-id' }).expect(200)).body.error).toEqual(inV10(missing.error));
  });

  it('answers a streaming method that fails before its stream starts with one SSE error frame, and v1.0 callers with JSON', async () => {
    const params = { message: { role: 'user', messageId: randomUUID(), parts: [{ kind: 'data', data: { capability_id: randomUUID() } }] } };
    const response = await call('message/stream', params).expect(200);
    expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(answerOf(response).error).toMatchObject({ code: -32001, data: { code: 4040 } });
    const v10 = await post({ jsonrpc: '2.0', id: 1, method: 'message/stream', params }, { ...caller.headers, 'A2A-Version': '1.0' }).expect(200);
    expect(v10.headers['content-type']).toMatch(/^application\/json/);
    expect(v10.body.error).toMatchObject({ code: -32001, data: [{ reason: 'TASK_NOT_FOUND' }, { value: { code: 4040 } }] });
  });

  it('answers cancelling a settled task with -32002 carrying the 4090 details', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const created = (
      await post(
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tasks/send',
          params: { id: randomUUID(), message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] } },
        },
        buyer.headers,
      ).expect(200)
    ).body.result;
    const transactionId = created.metadata.marketplace.transaction_id;
    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { ok: true } }).expect(200);
    await act(test, buyer, transactionId, 'confirm').expect(200);
    const response = await post({ jsonrpc: '2.0', id: 2, method: 'tasks/cancel', params: { id: created.id } }, buyer.headers).expect(200);
    expect(response.body.error).toMatchObject({
      code: -32002,
      data: { code: 4090, message: 'invalid_state_transition', data: { status: 'settled', action: 'cancel' } },
    });
  });
});

describe('ListTasks', () => {
  it('pages with pageToken, filters by state and context', async () => {
    const { buyer, capability } = await agentMarket(test);
    const ids: string[] = [];
    const contextIds: string[] = [];
    for (let index = 0; index < 3; index++) {
      const sent = await post(
        {
          jsonrpc: '2.0',
          id: index,
          method: 'SendMessage',
          params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } },
        },
        buyer.headers,
      ).expect(200);
      ids.push(sent.body.result.task.id);
      contextIds.push(sent.body.result.task.contextId);
    }
    const list = (params: unknown) => post({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params }, buyer.headers).expect(200);
    const first = (await list({ pageSize: 2 })).body.result;
    expect(first).toMatchObject({ pageSize: 2, totalSize: 3 });
    expect(first.nextPageToken).not.toBe('');
    const second = (await list({ pageSize: 2, pageToken: first.nextPageToken })).body.result;
    expect(second.nextPageToken).toBe('');
    expect([...first.tasks, ...second.tasks].map((task: { id: string }) => task.id).sort()).toEqual([...ids].sort());
    expect(first.tasks[0].status.state).toBe('TASK_STATE_SUBMITTED');

    expect((await list({ status: 'TASK_STATE_COMPLETED' })).body.result.tasks).toEqual([]);
    expect((await list({ status: 'TASK_STATE_SUBMITTED' })).body.result.totalSize).toBe(3);
    expect((await list({ contextId: randomUUID() })).body.result).toMatchObject({ tasks: [], totalSize: 0 });
    expect((await list({ contextId: 'not-one-of-ours' })).body.result).toMatchObject({ tasks: [], totalSize: 0 });
    const inContext = (await list({ contextId: contextIds[1] })).body.result;
    expect(inContext.tasks.map((task: { id: string }) => task.id)).toEqual([ids[1]]);
    expect((await list({ pageToken: 'garbage' })).body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
  });
});

describe('batches', () => {
  it('answers each entry of a mixed batch in order, and nothing for notifications', async () => {
    const response = await post([
      { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } },
      { jsonrpc: '2.0', method: 'tasks/get', params: { id: randomUUID() } },
      { jsonrpc: '1.0', id: 2, method: 'tasks/get' },
      { jsonrpc: '2.0', id: 3, method: 'no/such/method' },
      { jsonrpc: '2.0', id: 4, method: 'ListTasks', params: {} },
      5,
    ]).expect(200);
    expect(response.body).toHaveLength(5);
    expect(response.body.map((entry: { id: unknown }) => entry.id)).toEqual([1, 2, 3, 4, null]);
    expect(response.body.map((entry: { error?: { code: number } }) => entry.error?.code)).toEqual([-32001, -32600, -32601, undefined, -32600]);
    expect(response.body[3].result).toMatchObject({ tasks: [], totalSize: 0 });
  });

  it('answers a one-entry batch with an array', async () => {
    const response = await post([{ jsonrpc: '2.0', id: 'only', method: 'ListTasks', params: {} }]).expect(200);
    expect(Array.isArray(response.body)).toBe(true);
  });

  it('answers an empty batch with a single -32600', async () => {
    const response = await post([]).expect(200);
    expect(response.body).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('answers a batch of notifications, or a notification, with no body', async () => {
    await post([
      { jsonrpc: '2.0', method: 'ListTasks', params: {} },
      { jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } },
    ]).expect(204);
    await post({ jsonrpc: '2.0', method: 'ListTasks', params: {} }).expect(204);
  });

  it('refuses streaming methods inside an HTTP batch without running them', async () => {
    const response = await post([
      { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: 'x' } },
      { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: {} },
    ]).expect(200);
    expect(response.body[0]).toMatchObject({ id: 1, error: { code: -32004 } });
    expect(response.body[1]).toMatchObject({ id: 2, result: { tasks: expect.any(Array) } });
  });
});

describe('authentication', () => {
  const request = { jsonrpc: '2.0', id: 11, method: 'ListTasks', params: {} };

  it('answers missing credentials with HTTP 401 and a JSON-RPC error carrying 4010', async () => {
    const response = await test.http
      .post('/api/v1/rpc')
      .set('Content-Type', 'application/json')
      .set('A2A-Version', '1.0')
      .send(JSON.stringify(request))
      .expect(401);
    expect(response.body).toMatchObject({ jsonrpc: '2.0', id: 11, error: { code: -32110, data: { code: 4010, message: 'unauthenticated' } } });
  });

  it('leaves jsonrpc out of a non-2xx refusal to a caller without A2A-Version, which @a2a-js/sdk 0.2 would otherwise read twice and crash on', async () => {
    const response = await test.http.post('/api/v1/rpc').set('Content-Type', 'application/json').send(JSON.stringify(request)).expect(401);
    expect(response.body).toEqual({ id: 11, error: expect.objectContaining({ code: -32110, data: expect.objectContaining({ code: 4010 }) }) });
    const mixed = await post(request, { ...caller.headers, Authorization: 'Bearer x.y.z' }).expect(400);
    expect(mixed.body.jsonrpc).toBeUndefined();
  });

  it('answers a bad key with HTTP 401, and mixed credentials with HTTP 400 and 4011', async () => {
    const badKey = await post(request, { 'X-Api-Key': 'mk_000000000000_nope', 'X-Platform-User-Id': caller.userId }).expect(401);
    expect(badKey.body.error).toMatchObject({ code: -32110, data: { code: 4010 } });
    const human = await signUpHuman(test);
    const mixed = await post(request, { ...caller.headers, Authorization: `Bearer ${human.token}` }).expect(400);
    expect(mixed.body).toMatchObject({ id: 11, error: { code: -32111, data: { code: 4011, message: 'mixed_credentials' } } });
  });

  it('checks credentials before reading the request: no parse error for anonymous callers', async () => {
    const response = await test.http.post('/api/v1/rpc').set('Content-Type', 'application/json').send('{oops').expect(401);
    expect(response.body).toMatchObject({ id: null, error: { code: -32110 } });
  });

  it('accepts a human bearer token', async () => {
    const human = await signUpHuman(test);
    const response = await post(request, human.headers).expect(200);
    expect(response.body).toMatchObject({ id: 11, result: { tasks: [] } });
  });
});

describe('limits', () => {
  it('answers a body over 1 MiB with HTTP 413 and a JSON-RPC error carrying 4130', async () => {
    const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x', pad: 'x'.repeat(1024 * 1024) } });
    const response = await post(huge).expect(413);
    expect(response.body).toMatchObject({ id: null, error: { code: -32113, data: { code: 4130, message: 'payload_too_large' } } });
  });

  it('answers a batch over the batch limit with -32600', async () => {
    const batch = Array.from({ length: 51 }, (_, index) => ({ jsonrpc: '2.0', id: index, method: 'ListTasks', params: {} }));
    expect((await post(batch).expect(200)).body).toMatchObject({ id: null, error: { code: -32600 } });
  });

  it('answers an invalid Last-Event-ID with -32602', async () => {
    const response = await test.http.post('/api/v1/rpc').set(caller.headers).set('Last-Event-ID', 'yesterday').send(request()).expect(200);
    expect(answerOf(response).error).toMatchObject({ code: -32602, data: { code: 4000 } });
    function request() {
      return { jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: 'x' } };
    }
  });
});

describe('an action refused by the state, other than cancel', () => {
  it('keeps the marketplace code -32190 with data.code 4090; only cancel answers -32002', async () => {
    const { buyer, capability } = await agentMarket(test);
    const sent = await post(
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tasks/send',
        params: { id: `early-${randomUUID()}`, message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] } },
      },
      buyer.headers,
    ).expect(200);
    const taskId = sent.body.result.id;
    const confirmTooEarly = await post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tasks/send',
        params: { id: taskId, message: { role: 'user', parts: [{ type: 'data', data: { action: 'confirm' } }] } },
      },
      buyer.headers,
    ).expect(200);
    expect(confirmTooEarly.body.error).toMatchObject({ code: -32190, data: { code: 4090, data: { status: 'frozen', action: 'confirm' } } });
  });
});

describe('v1.0 errors (A2A specification 1.0, sections 3.1 and 9.5)', () => {
  const v10Message = (parts: unknown[], taskId?: string) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', ...(taskId ? { taskId } : {}), parts } });

  /** A task bought, delivered and confirmed over v1.0: it has ended (completed). */
  async function settledTask() {
    const { buyer, seller, capability } = await agentMarket(test);
    const sent = await post(
      { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: v10Message([{ data: { capability_id: capability.id } }]) },
      buyer.headers,
    ).expect(200);
    const task = sent.body.result.task as { id: string };
    await act(test, seller, task.id, 'accept').expect(200);
    await act(test, seller, task.id, 'deliver', { result_payload: { ok: true } }).expect(200);
    await act(test, buyer, task.id, 'confirm').expect(200);
    return { buyer, task };
  }

  it('gives A2A errors a google.rpc.ErrorInfo first in data, by method name or by the A2A-Version header; other errors keep the envelope', async () => {
    const byName = (await call('GetTask', { id: randomUUID() }).expect(200)).body.error;
    expect(byName).toEqual({
      code: -32001,
      message: expect.any(String),
      data: [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'TASK_NOT_FOUND',
          domain: 'a2a-protocol.org',
          metadata: { code: '4040', message: 'not_found' },
        },
        { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { code: 4040, message: 'not_found', data: expect.anything() } },
      ],
    });
    const byHeader = await post(
      { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } },
      { ...caller.headers, 'A2A-Version': '1.0' },
    ).expect(200);
    expect(byHeader.body.error).toEqual(byName);
    const unsupported = (await call('GetExtendedAgentCard', {}).expect(200)).body.error;
    expect(unsupported.data).toEqual([
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'UNSUPPORTED_OPERATION',
        domain: 'a2a-protocol.org',
        metadata: { detail: expect.any(String) },
      },
      { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { detail: expect.any(String) } },
    ]);
    // JSON-RPC's own codes and the marketplace's are not A2A errors: their data stays the envelope.
    expect((await call('GetTask', {}).expect(200)).body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
    expect((await post({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }, {}).expect(401)).body.error).toMatchObject({
      code: -32110,
      data: { code: 4010 },
    });
    expect((await call('tasks/get', { id: randomUUID() }).expect(200)).body.error.data).toMatchObject({ code: 4040 });
  });

  it('answers a message to an ended task, and SubscribeToTask of it, with -32004 carrying the 4090; older generations keep theirs', async () => {
    const { buyer, task } = await settledTask();
    const again = await post(
      { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: v10Message([{ data: { action: 'confirm' } }], task.id) },
      buyer.headers,
    ).expect(200);
    expect(again.body.error).toMatchObject({
      code: -32004,
      data: [{ reason: 'UNSUPPORTED_OPERATION', metadata: { code: '4090' } }, { value: { code: 4090, data: { status: 'settled', action: 'confirm' } } }],
    });
    // The streaming methods fail before a stream starts: JSON for a caller that names 1.0, one SSE error frame otherwise.
    const v10Headers = { ...buyer.headers, 'A2A-Version': '1.0' };
    const words = await post({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: v10Message([{ text: 'thanks' }], task.id) }, v10Headers).expect(
      200,
    );
    expect(words.headers['content-type']).toMatch(/^application\/json/);
    expect(words.body.error).toMatchObject({
      code: -32004,
      data: [{ reason: 'UNSUPPORTED_OPERATION' }, { value: { data: { status: 'settled', action: 'message' } } }],
    });
    for (const headers of [v10Headers, buyer.headers]) {
      const subscribed = await post({ jsonrpc: '2.0', id: 4, method: 'SubscribeToTask', params: { id: task.id } }, headers).expect(200);
      expect(answerOf(subscribed).error).toMatchObject({
        code: -32004,
        data: [{ reason: 'UNSUPPORTED_OPERATION' }, { value: { detail: expect.stringContaining('settled') } }],
      });
    }
    expect((await post({ jsonrpc: '2.0', id: 5, method: 'GetTask', params: { id: task.id } }, buyer.headers).expect(200)).body.result.status.state).toBe(
      'TASK_STATE_COMPLETED',
    );

    const older = await post(
      {
        jsonrpc: '2.0',
        id: 6,
        method: 'message/send',
        params: {
          message: { kind: 'message', messageId: randomUUID(), role: 'user', taskId: task.id, parts: [{ kind: 'data', data: { action: 'confirm' } }] },
        },
      },
      buyer.headers,
    ).expect(200);
    expect(older.body.error).toMatchObject({ code: -32190, data: { code: 4090, data: { status: 'settled', action: 'confirm' } } });
    const resubscribed = await post({ jsonrpc: '2.0', id: 7, method: 'tasks/resubscribe', params: { id: task.id } }, buyer.headers).expect(200);
    expect(resubscribed.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(resubscribed.text).toContain('"state":"completed"');
    // The shared name under A2A-Version: 1.0 is a v1.0 call: refused as SubscribeToTask is.
    const resubscribedIn10 = await post({ jsonrpc: '2.0', id: 8, method: 'tasks/resubscribe', params: { id: task.id } }, v10Headers).expect(200);
    expect(resubscribedIn10.body.error).toMatchObject({ code: -32004, data: [{ reason: 'UNSUPPORTED_OPERATION' }, { value: { detail: expect.any(String) } }] });
    // A purchase part to the ended task is refused by its state too, not as a bad part.
    const buyAgain = await post(
      { jsonrpc: '2.0', id: 9, method: 'SendMessage', params: v10Message([{ data: { capability_id: randomUUID() } }], task.id) },
      buyer.headers,
    ).expect(200);
    expect(buyAgain.body.error).toMatchObject({
      code: -32004,
      data: [{ reason: 'UNSUPPORTED_OPERATION' }, { value: { code: 4090, data: { status: 'settled', action: 'buy' } } }],
    });
  });

  it('keeps -32190 for a v1.0 message the task cannot take yet (confirm before delivery)', async () => {
    const { buyer, capability } = await agentMarket(test);
    const sent = await post(
      { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: v10Message([{ data: { capability_id: capability.id } }]) },
      buyer.headers,
    ).expect(200);
    const early = await post(
      { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: v10Message([{ data: { action: 'confirm' } }], sent.body.result.task.id) },
      buyer.headers,
    ).expect(200);
    expect(early.body.error).toMatchObject({ code: -32190, data: { code: 4090, data: { status: 'frozen', action: 'confirm' } } });
  });
});

describe('A2A-Version (A2A specification 1.0, section 3.6)', () => {
  const buy = (capabilityId: string, id: unknown = 1) => ({
    jsonrpc: '2.0',
    id,
    method: 'SendMessage',
    params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capabilityId } }] } },
  });
  const versionError = (requested: string) => ({
    code: -32009,
    message: 'Version not supported',
    data: [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'VERSION_NOT_SUPPORTED',
        domain: 'a2a-protocol.org',
        metadata: { detail: expect.stringContaining(requested), requested_version: requested, supported_versions: '0.1,0.2,0.3,1.0' },
      },
      { '@type': 'type.googleapis.com/google.protobuf.Struct', value: expect.objectContaining({ requested_version: requested }) },
    ],
  });

  it('refuses every call under a version this server does not speak with -32009, buying nothing, whatever the method name', async () => {
    const { buyer, capability } = await agentMarket(test);
    const before = await balance(test, buyer);
    for (const version of ['2.0', '1.1', '0.4', 'latest', '1.0-rc', '0', '1.0, 0.3']) {
      const headers = { ...buyer.headers, 'A2A-Version': version };
      expect((await post(buy(capability.id), headers).expect(200)).body).toEqual({ jsonrpc: '2.0', id: 1, error: versionError(version) });
      const older = await post({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: randomUUID() } }, headers).expect(200);
      expect(older.body.error).toEqual(versionError(version));
      // A streaming method is refused before any stream starts, in JSON.
      const streaming = await post({ ...buy(capability.id, 3), method: 'SendStreamingMessage' }, headers).expect(200);
      expect(streaming.headers['content-type']).toMatch(/^application\/json/);
      expect(streaming.body.error).toEqual(versionError(version));
    }
    // A batch: each call its own refusal; a notification is owed nothing.
    const batch = await post([buy(capability.id, 'a'), { jsonrpc: '2.0', method: 'tasks/cancel', params: { id: randomUUID() } }, buy(capability.id, 'b')], {
      ...buyer.headers,
      'A2A-Version': '2.0',
    }).expect(200);
    expect(batch.body).toEqual([
      { jsonrpc: '2.0', id: 'a', error: versionError('2.0') },
      { jsonrpc: '2.0', id: 'b', error: versionError('2.0') },
    ]);
    // A notification alone is owed nothing: no body.
    await post({ jsonrpc: '2.0', method: 'SendMessage', params: buy(capability.id).params }, { ...buyer.headers, 'A2A-Version': '2.0' }).expect(204);
    // The refusal comes before a bad Last-Event-ID is looked at.
    const resumed = await post(
      { jsonrpc: '2.0', id: 4, method: 'SubscribeToTask', params: { id: randomUUID() } },
      {
        ...buyer.headers,
        'A2A-Version': '2.0',
        'Last-Event-ID': 'not-a-sequence',
      },
    ).expect(200);
    expect(resumed.body.error).toEqual(versionError('2.0'));
    // A long value is echoed back cut to 32 characters, however many calls of a batch repeat it.
    const long = `9.${'9'.repeat(4000)}`;
    const echoed = await post(
      Array.from({ length: 20 }, (_, index) => buy(capability.id, index)),
      { ...buyer.headers, 'A2A-Version': long },
    ).expect(200);
    expect(echoed.body[0].error.data[0].metadata.requested_version).toBe(long.slice(0, 32));
    expect(echoed.text.length).toBeLessThan(20 * 1024);
    expect(await balance(test, buyer)).toEqual(before);
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
  });

  it('speaks 0.1, 0.2, 0.3 and 1.0, read as Major.Minor (a patch number or a missing minor are the version they name), and none at all', async () => {
    const { buyer, capability } = await agentMarket(test, '1000.00');
    const answers: [string, string][] = [
      ['1.0', 'TASK_STATE_SUBMITTED'],
      ['1', 'TASK_STATE_SUBMITTED'],
      ['1.0.1', 'TASK_STATE_SUBMITTED'],
      [' 1.0 ', 'TASK_STATE_SUBMITTED'],
      ['v1.0', 'TASK_STATE_SUBMITTED'],
      ['01.0', 'TASK_STATE_SUBMITTED'],
      // A header sent twice arrives joined by a comma; the same version twice is that version.
      ['1.0, 1.0', 'TASK_STATE_SUBMITTED'],
      ['0.3', 'submitted'],
      ['0.3.0', 'submitted'],
      ['0.2', 'submitted'],
      ['', 'submitted'],
    ];
    for (const [version, state] of answers) {
      const headers = version === '' ? buyer.headers : { ...buyer.headers, 'A2A-Version': version };
      const sent = await post(buy(capability.id), headers).expect(200);
      expect(sent.body.error, version).toBeUndefined();
      const task = sent.body.result.task as { id: string };
      const read = await post({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: task.id } }, headers).expect(200);
      expect(read.body.result.status.state, version).toBe(state);
    }
    const v01 = await post({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: randomUUID() } }, { ...buyer.headers, 'A2A-Version': '0.1' }).expect(
      200,
    );
    expect(v01.body.error).toMatchObject({ code: -32001, data: { code: 4040 } });
  });

  it('reads the version from an A2A-Version query parameter when no header names one', async () => {
    const { buyer, capability } = await agentMarket(test);
    const postTo = (query: string, body: unknown, headers: Record<string, string> = buyer.headers) =>
      test.http.post(`/api/v1/rpc?${query}`).set(headers).set('Content-Type', 'application/json').send(JSON.stringify(body));
    const sent = await postTo('A2A-Version=1.0', buy(capability.id)).expect(200);
    const read = await postTo('A2A-Version=1.0', { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: sent.body.result.task.id } }).expect(200);
    expect(read.body.result.status.state).toBe('TASK_STATE_SUBMITTED');
    expect((await postTo('A2A-Version=2.0', buy(capability.id)).expect(200)).body.error).toEqual(versionError('2.0'));
    // The header, when sent, is what counts.
    const headerWins = await postTo(
      'A2A-Version=2.0',
      { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { id: sent.body.result.task.id } },
      {
        ...buyer.headers,
        'A2A-Version': '0.3',
      },
    ).expect(200);
    expect(headerWins.body.result.status.state).toBe('submitted');
    const card = await test.http.get('/.well-known/agent-card.json?A2A-Version=0.3').expect(200);
    expect(card.body).toHaveProperty('securitySchemes');
    expect(card.body).not.toHaveProperty('supportedInterfaces');
  });

  it('still serves the agent card to a client of another version, in its newest form, so the client can read which versions are spoken', async () => {
    const card = await test.http.get('/.well-known/agent-card.json').set('A2A-Version', '2.0').expect(200);
    expect(card.body.supportedInterfaces.map((entry: { protocolVersion: string }) => entry.protocolVersion)).toEqual(['1.0', '0.3']);
  });
});
