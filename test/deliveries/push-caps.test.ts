import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { type Actor, createApiKey } from '../helpers/actors.ts';
import { rpcCaller, v10Text } from '../helpers/a2a.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * Caps on push configs and webhooks per user and per API key (issue 28 point 5), and push config
 * headers that could never be sent (point 6), through JSON-RPC and REST as clients call them.
 * The subscriptions that bring a user or key to the edge of a cap are written directly, to keep
 * the test small (as the observation did); the one that passes it is made by the API.
 */
let test: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
  rpc = rpcCaller(test);
});
afterAll(async () => {
  await receiver.close();
  await test.close();
});

type Json = Record<string, any>;
const db = () => test.runtime.engine.dependencies.db;
const url = 'https://receiver.example/a2a';

/** Live subscriptions of `owner` (on tasks of nobody's: never finished), written directly. */
async function existing(owner: string, count: number, options: { kind?: 'webhook' | 'a2a_push'; apiKeyId?: string } = {}) {
  const at = new Date();
  const rows = Array.from({ length: count }, (_, index) => {
    const taskId = randomUUID();
    const push = (options.kind ?? 'a2a_push') === 'a2a_push';
    return {
      id: randomUUID(),
      kind: push ? 'a2a_push' : 'webhook',
      owner_user_id: owner,
      owner_type: 'agent',
      url,
      event_types: ['transaction.*'],
      secret: 'whsec_AAAA',
      created_at: at,
      api_key_id: options.apiKeyId ?? null,
      ...(push ? { a2a_generation: 'v1.0', a2a_task_id: taskId, a2a_task_name: taskId, a2a_config_id: `existing-${index}` } : {}),
    };
  });
  for (let start = 0; start < rows.length; start += 1_000) await db()('webhook_subscriptions').insert(rows.slice(start, start + 1_000));
}

/** A purchase task over v1.0 (frozen at once: the buyer is funded). */
async function purchase(buyer: Actor, capabilityId: string, configuration?: Json) {
  return rpc.call(buyer, 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capabilityId } }] },
    ...(configuration ? { configuration } : {}),
  });
}

/** A user of an auto-provisioning key, and a conversation task of theirs (no money needed). */
async function keyUserWithTask(key: { api_key: string }) {
  const user = { userId: randomUUID(), headers: {} as Record<string, string> };
  user.headers = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': user.userId };
  const sent = await rpc.ok(user, 'SendMessage', v10Text('Please translate my invoices from English to German'));
  return { user, taskId: sent.task.id as string };
}

describe('push configs per user', () => {
  it("refuses one past the caller's cap on all its tasks, in every generation, with 4092 naming the cap; an id it has is still replaced", async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = (await purchase(buyer, capability.id)).result!.task;
    await existing(buyer.userId, limits.a2aPushConfigsPerUserMax - 1);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'last', url });

    const refusals = [
      await rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url }),
      await rpc.call(buyer, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { id: 'v03', url } }),
      await rpc.call(buyer, 'tasks/pushNotification/set', { id: task.id, pushNotificationConfig: { url } }),
    ];
    for (const { error } of refusals) {
      expect(error).toMatchObject({ code: -32192, data: { code: 4092, data: { configs_per_user_max: limits.a2aPushConfigsPerUserMax } } });
      expect(error!.message).toContain(`${limits.a2aPushConfigsPerUserMax} push notification configs`);
    }
    expect(await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'last', url: `${url}/replaced` })).toMatchObject({
      id: 'last',
      url: `${url}/replaced`,
    });
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toHaveLength(1);
  });

  it('makes room by retiring a config whose task is over and has nothing left to send', async () => {
    const { buyer, capability } = await agentMarket(test);
    const finished = (await purchase(buyer, capability.id)).result!.task;
    const running = (await purchase(buyer, capability.id)).result!.task;
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: finished.id, id: 'old', url: receiver.url('/finished') });
    await existing(buyer.userId, limits.a2aPushConfigsPerUserMax - 1);
    expect((await rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: running.id, url })).error).toMatchObject({ data: { code: 4092 } });

    await act(test, buyer, finished.id, 'cancel').expect(200);
    // While the cancellation is still to be pushed, the config has work left: no room yet.
    expect((await rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: running.id, url })).error).toMatchObject({ data: { code: 4092 } });
    await test.runtime.engine.webhooks.runOnce();
    expect(receiver.at('/finished').length).toBeGreaterThan(0);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: running.id, id: 'new', url });
    expect((await rpc.call(buyer, 'GetTaskPushNotificationConfig', { taskId: finished.id, id: 'old' })).error).toMatchObject({ code: -32001 });
    expect((await rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: running.id, url })).error).toMatchObject({ data: { code: 4092 } });
  });

  it('refuses a send whose inline config would pass the cap before it buys anything, in every generation', async () => {
    const { buyer, capability } = await agentMarket(test);
    await existing(buyer.userId, limits.a2aPushConfigsPerUserMax);
    const before = await balance(test, buyer);
    const sends: [string, Json][] = [
      [
        'SendMessage',
        {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
          configuration: { taskPushNotificationConfig: { url } },
        },
      ],
      [
        'message/send',
        {
          message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
          configuration: { pushNotificationConfig: { url } },
        },
      ],
      [
        'tasks/send',
        {
          id: randomUUID(),
          sessionId: randomUUID(),
          message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] },
          pushNotification: { url },
        },
      ],
    ];
    for (const [method, params] of sends)
      expect((await rpc.call(buyer, method, params)).error, method).toMatchObject({
        code: -32192,
        data: { code: 4092, data: { configs_per_user_max: limits.a2aPushConfigsPerUserMax } },
      });
    expect(await balance(test, buyer)).toEqual(before);
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
    // Without a config the same send buys.
    expect((await purchase(buyer, capability.id)).result!.task.id).toBeTruthy();
  });

  it(raceTest('lets parallel creates reach the cap and not one beyond'), async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = (await purchase(buyer, capability.id)).result!.task;
    await existing(buyer.userId, limits.a2aPushConfigsPerUserMax - 2);
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) => rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: `parallel-${index}`, url })),
    );
    expect(answers.filter((answer) => answer.result)).toHaveLength(2);
    expect(answers.filter((answer) => answer.error?.data?.code === 4092)).toHaveLength(4);
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toHaveLength(2);
  });
});

describe('per API key', () => {
  it('caps the push configs of all the users of one key together, also when they are made in parallel', async () => {
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const first = await keyUserWithTask(key);
    await existing(first.user.userId, limits.a2aPushConfigsPerApiKeyMax - 2, { apiKeyId: key.id });
    const others = await Promise.all(Array.from({ length: 5 }, () => keyUserWithTask(key)));
    const answers = await Promise.all(others.map(({ user, taskId }) => rpc.call(user, 'CreateTaskPushNotificationConfig', { taskId, url })));
    expect(answers.filter((answer) => answer.result)).toHaveLength(2);
    for (const { error } of answers.filter((answer) => answer.error)) {
      expect(error).toMatchObject({ code: -32192, data: { code: 4092, data: { configs_per_api_key_max: limits.a2aPushConfigsPerApiKeyMax } } });
      expect(error!.message).toContain('API key');
    }
  });

  it('caps the webhooks of all the users of one key together, over REST, also when they are made in parallel', async () => {
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const users = Array.from({ length: 6 }, () => ({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() }));
    const me = await test.http.get('/api/v1/auth/me').set(users[0]!).expect(200);
    await existing(me.body.data.user_id, limits.webhookSubscriptionsPerApiKeyMax - 2, { kind: 'webhook', apiKeyId: key.id });
    const answers = await Promise.all(
      users.slice(1).map((headers) =>
        test.http
          .post('/api/v1/webhooks')
          .set(headers)
          .send({ url, event_types: ['*'] }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 409, 409, 409]);
    for (const refused of answers.filter((answer) => answer.status === 409)) {
      expect(refused.body).toMatchObject({ code: 4092, data: { webhooks_per_api_key_max: limits.webhookSubscriptionsPerApiKeyMax } });
      expect(refused.body.data.detail).toContain('API key');
    }
  });
});

describe('headers that cannot be sent', () => {
  const unsendable = ['tok\r\nX-Injected: yes', 'line\nbreak', 'bell\u0007', 'del\u007f', 'euro \u20ac', '\u4e2d\u6587'];

  it("refuses such a token, scheme or credentials with -32602 in every generation's set, naming the field; Latin-1 is accepted", async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = (await purchase(buyer, capability.id)).result!.task;
    for (const text of unsendable) {
      const calls: [string, Json, string][] = [
        ['CreateTaskPushNotificationConfig', { taskId: task.id, url, token: text }, 'params.token'],
        [
          'CreateTaskPushNotificationConfig',
          { taskId: task.id, url, authentication: { scheme: 'Bearer', credentials: text } },
          'params.authentication.credentials',
        ],
        ['CreateTaskPushNotificationConfig', { taskId: task.id, url, authentication: { scheme: text } }, 'params.authentication.scheme'],
        ['tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url, token: text } }, 'params.pushNotificationConfig.token'],
        [
          'tasks/pushNotificationConfig/set',
          { taskId: task.id, pushNotificationConfig: { url, authentication: { schemes: [text], credentials: 'c' } } },
          'params.pushNotificationConfig.authentication.schemes.0',
        ],
        [
          'tasks/pushNotification/set',
          { id: task.id, pushNotificationConfig: { url, authentication: { schemes: ['Bearer'], credentials: text } } },
          'params.pushNotificationConfig.authentication.credentials',
        ],
      ];
      for (const [method, params, path] of calls) {
        const { error } = await rpc.call(buyer, method, params);
        expect(error, `${method} ${JSON.stringify(params)}`).toMatchObject({
          code: -32602,
          data: { code: 4000, data: { errors: [{ path, message: expect.stringContaining('HTTP header') }] } },
        });
      }
    }
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toEqual([]);
    expect(
      await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', {
        taskId: task.id,
        id: 'latin',
        url,
        token: 'caf\u00e9\tna\u00efve',
        authentication: { scheme: 'Bearer', credentials: 'se\u00f1or' },
      }),
    ).toMatchObject({ token: 'caf\u00e9\tna\u00efve' });
  });

  it('refuses a send whose inline config has one, in every generation, before anything is bought', async () => {
    const { buyer, capability } = await agentMarket(test);
    const before = await balance(test, buyer);
    const sends: [string, Json][] = [
      [
        'SendMessage',
        {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
          configuration: { taskPushNotificationConfig: { url, token: 'a\r\nb' } },
        },
      ],
      [
        'message/send',
        {
          message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
          configuration: { pushNotificationConfig: { url, authentication: { schemes: ['Bearer'], credentials: '\u20ac' } } },
        },
      ],
      [
        'tasks/send',
        {
          id: randomUUID(),
          sessionId: randomUUID(),
          message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] },
          pushNotification: { url, token: 'x\ny' },
        },
      ],
    ];
    for (const [method, params] of sends) expect((await rpc.call(buyer, method, params)).error, method).toMatchObject({ code: -32602, data: { code: 4000 } });
    expect(await balance(test, buyer)).toEqual(before);
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
  });

  it("REST webhooks take no headers of the caller's: a body naming some is refused", async () => {
    const { buyer } = await agentMarket(test);
    const refused = await test.http
      .post('/api/v1/webhooks')
      .set(buyer.headers)
      .send({ url, event_types: ['*'], headers: { 'X-Token': 'a\r\nb' } })
      .expect(400);
    expect(refused.body).toMatchObject({ code: 4000 });
  });
});
