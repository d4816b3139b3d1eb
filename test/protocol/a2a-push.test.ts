import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import type { Actor } from '../helpers/actors.ts';
import { createAgent } from '../helpers/actors.ts';
import { hex, rpcCaller, v01Text, v10Details, v10Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, admin, agentMarket } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * A2A push notifications (docs/webhooks.md "A2A push notifications") through JSON-RPC, as each
 * generation's clients call them, delivered to a real receiver on loopback by the webhook
 * pipeline: the config methods, configs inside a send, what each generation's body looks like,
 * its headers, the order, and retries.
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
const deliver = () => test.runtime.engine.webhooks.runOnce();
const bodies = (path: string) => receiver.at(path).map((request) => JSON.parse(request.body) as Json);

/** A purchase task over v1.0: the buyer's SendMessage with a data part naming the capability. */
async function purchase(buyer: Actor, capabilityId: string, configuration?: Json) {
  const sent = await rpc.ok(buyer, 'SendMessage', {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capabilityId } }] },
    ...(configuration ? { configuration } : {}),
  });
  return sent.task as Json;
}

/** The v1.0 state a push body tells of: the task's, or the status update's. */
const v10State = (body: Json) => body.task?.status.state ?? body.statusUpdate?.status.state ?? (body.artifactUpdate ? 'artifact' : 'unknown');

describe('config methods, v1.0', () => {
  it('creates, reads, lists (proto-JSON snake_case too) and deletes a config; delete is idempotent', async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    const created = await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', {
      taskId: task.id,
      id: 'mine',
      url: 'https://receiver.example/a2a',
      token: 't-1',
      authentication: { scheme: 'Bearer', credentials: 'secret' },
    });
    expect(created).toEqual({ id: 'mine', taskId: task.id, url: 'https://receiver.example/a2a', token: 't-1', authentication: { scheme: 'Bearer' } });
    expect(await rpc.ok(buyer, 'GetTaskPushNotificationConfig', { task_id: task.id, id: 'mine' })).toEqual(created);
    const assigned = await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://receiver.example/other' });
    expect(assigned.id).toMatch(/^[0-9a-f-]{36}$/);
    const listed = await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { task_id: task.id });
    expect(listed.configs.map((config: Json) => config.id)).toEqual(['mine', assigned.id]);
    const paged = await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 1 });
    expect(paged).toMatchObject({ configs: [{ id: 'mine' }], nextPageToken: '1' });
    expect(
      (await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id, pageSize: 1, pageToken: '1' })).configs.map((config: Json) => config.id),
    ).toEqual([assigned.id]);

    expect(await rpc.call(buyer, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'mine' })).toMatchObject({ result: null });
    expect((await rpc.call(buyer, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'mine' })).error).toMatchObject({
      code: -32001,
      message: 'push notification config not found',
    });
    expect(await rpc.call(buyer, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'mine' })).toMatchObject({ result: null });
    // The same id again replaces, it does not add.
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: assigned.id, url: 'https://receiver.example/replaced' });
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toEqual([
      { id: assigned.id, taskId: task.id, url: 'https://receiver.example/replaced' },
    ]);
  });

  it("answers -32001 for a task that is not there or not the caller's, -32602 for bad params, and bounds configs per task", async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    const stranger = await createAgent(test);
    for (const [actor, taskId] of [
      [buyer, 'nonexistent-task-id'],
      [stranger, task.id],
    ] as const) {
      const error = (await rpc.call(actor, 'CreateTaskPushNotificationConfig', { taskId, url: 'https://receiver.example/a2a' })).error!;
      expect(error).toMatchObject({ code: -32001, data: v10Details('TASK_NOT_FOUND', 4040) });
      expect(error.message.toLowerCase()).toContain('not found');
      expect((await rpc.call(actor, 'ListTaskPushNotificationConfigs', { taskId })).error).toMatchObject({ code: -32001 });
      expect((await rpc.call(actor, 'DeleteTaskPushNotificationConfig', { taskId, id: 'x' })).error).toMatchObject({ code: -32001 });
    }
    for (const params of [
      { taskId: task.id },
      { taskId: task.id, url: 'ftp://receiver.example/a2a' },
      { taskId: task.id, url: 'not a url' },
      { url: 'https://receiver.example/a2a' },
      { taskId: task.id, url: 'https://receiver.example/a2a', authentication: { credentials: 'no scheme' } },
      { taskId: task.id, url: 'https://receiver.example/a2a', token: 7 },
    ]) {
      expect((await rpc.call(buyer, 'CreateTaskPushNotificationConfig', params)).error, JSON.stringify(params)).toMatchObject({
        code: -32602,
        data: { code: 4000 },
      });
    }
    expect((await rpc.call(null, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://receiver.example/a2a' })).error).toMatchObject({
      data: { code: 4010 },
    });
    for (let index = 0; index < limits.a2aPushConfigsPerTaskMax; index++)
      await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://receiver.example/a2a' });
    expect((await rpc.call(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://receiver.example/a2a' })).error).toMatchObject({
      data: { code: 4092 },
    });
    // The stranger's view of the task is unchanged: nothing of the buyer's configs shows.
    expect((await rpc.call(stranger, 'GetTaskPushNotificationConfig', { taskId: task.id, id: 'x' })).error).toMatchObject({ code: -32001 });
  });

  it("keeps each party's configs apart: the seller sees and deletes only its own", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'buyer-hook', url: 'https://receiver.example/buyer' });
    await rpc.ok(seller, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'seller-hook', url: 'https://receiver.example/seller' });
    expect((await rpc.ok(seller, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs.map((config: Json) => config.id)).toEqual(['seller-hook']);
    await rpc.ok(seller, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'buyer-hook' });
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs.map((config: Json) => config.id)).toEqual(['buyer-hook']);
  });

  it("is not a REST webhook: the owner's webhook list and limit do not count configs", async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    const config = await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: 'https://receiver.example/a2a' });
    expect((await test.http.get('/api/v1/webhooks').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
    expect(config.id).toBeTruthy();
  });
});

describe('config methods, v0.3 and v0.1', () => {
  it('v0.3: set without an id names the config after the task; get falls back to the first; list is an array; delete answers null', async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    const set = await rpc.ok(buyer, 'tasks/pushNotificationConfig/set', {
      taskId: task.id,
      pushNotificationConfig: { url: 'https://receiver.example/v03', token: 'tok' },
    });
    expect(set).toEqual({ taskId: task.id, pushNotificationConfig: { id: task.id, url: 'https://receiver.example/v03', token: 'tok' } });
    expect(await rpc.ok(buyer, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'default' })).toEqual(set);
    expect(await rpc.ok(buyer, 'tasks/pushNotificationConfig/get', { id: task.id })).toEqual(set);
    const second = await rpc.ok(buyer, 'tasks/pushNotificationConfig/set', {
      taskId: task.id,
      pushNotificationConfig: { id: 'two', url: 'https://receiver.example/two', authentication: { schemes: ['Bearer'], credentials: 'c' } },
    });
    expect(second.pushNotificationConfig).toEqual({ id: 'two', url: 'https://receiver.example/two', authentication: { schemes: ['Bearer'] } });
    expect(await rpc.ok(buyer, 'tasks/pushNotificationConfig/get', { id: task.id, pushNotificationConfigId: 'two' })).toEqual(second);
    const listed = await rpc.call(buyer, 'tasks/pushNotificationConfig/list', { id: task.id });
    expect(listed.result).toEqual([set, second]);
    expect(await rpc.call(buyer, 'tasks/pushNotificationConfig/delete', { id: task.id, pushNotificationConfigId: 'two' })).toMatchObject({ result: null });
    expect((await rpc.call(buyer, 'tasks/pushNotificationConfig/list', { id: task.id })).result).toEqual([set]);
    expect((await rpc.call(buyer, 'tasks/pushNotificationConfig/get', { id: 'nonexistent-task-id' })).error).toMatchObject({ code: -32001 });
  });

  it('v0.1: one config per task, set again replaces it, null clears it', async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    expect(await rpc.ok(buyer, 'tasks/pushNotification/get', { id: task.id })).toEqual({ id: task.id, pushNotificationConfig: null });
    await rpc.ok(buyer, 'tasks/pushNotification/set', { id: task.id, pushNotificationConfig: { url: 'https://receiver.example/first' } });
    const replaced = await rpc.ok(buyer, 'tasks/pushNotification/set', {
      id: task.id,
      pushNotificationConfig: { url: 'https://receiver.example/v01', token: 'abc' },
    });
    expect(replaced).toEqual({ id: task.id, pushNotificationConfig: { url: 'https://receiver.example/v01', token: 'abc' } });
    expect(await rpc.ok(buyer, 'tasks/pushNotification/get', { id: task.id })).toEqual(replaced);
    await rpc.ok(buyer, 'tasks/pushNotification/set', { id: task.id, pushNotificationConfig: null });
    expect(await rpc.ok(buyer, 'tasks/pushNotification/get', { id: task.id })).toEqual({ id: task.id, pushNotificationConfig: null });
  });
});

describe('what arrives', () => {
  it("a purchase's whole life, in order, at a v1.0 config given in the send (with its Authorization) and a v0.3 config, each body signed", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const authentication = { scheme: 'Bearer', credentials: 'receiver-token' };
    const task = await purchase(buyer, capability.id, { taskPushNotificationConfig: { url: receiver.url('/life-v10'), token: 'n-token', authentication } });
    await rpc.ok(buyer, 'tasks/pushNotificationConfig/set', { taskId: task.id, pushNotificationConfig: { url: receiver.url('/life-v03') } });
    await act(test, seller, task.id, 'accept').expect(200);
    await act(test, seller, task.id, 'deliver', { result_payload: { answer: 42 } }).expect(200);
    await act(test, buyer, task.id, 'confirm').expect(200);
    await deliver();

    const v10 = bodies('/life-v10');
    expect(v10.map(v10State)).toEqual([task.status.state, 'TASK_STATE_WORKING', 'artifact', 'TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_COMPLETED']);
    expect(v10[0]!.task.id).toBe(task.id);
    for (const body of v10.slice(1)) expect(Object.keys(body)).toHaveLength(1);
    expect(v10[2]!.artifactUpdate).toMatchObject({ taskId: task.id });
    expect(JSON.stringify(v10[2]!.artifactUpdate.artifact)).toContain('42');
    for (const request of receiver.at('/life-v10')) {
      expect(request.headers.authorization).toBe('Bearer receiver-token');
      expect(request.headers['x-a2a-notification-token']).toBe('n-token');
      expect(request.headers['content-type']).toBe('application/json');
    }
    // The v0.3 config was set after the send: it hears what happened from then on, each time the whole task.
    const v03 = bodies('/life-v03');
    expect(v03.map((body) => [body.kind, body.id, body.status.state])).toEqual([
      ['task', task.id, 'working'],
      ['task', task.id, 'input-required'],
      ['task', task.id, 'completed'],
    ]);
    expect(v03[1]!.artifacts).toHaveLength(1);
    expect(
      receiver.at('/life-v03').every((request) => request.headers['x-a2a-notification-token'] === undefined && request.headers.authorization === undefined),
    ).toBe(true);
    const ids = receiver.at('/life-v10').map((request) => request.headers['webhook-id']);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a dispute and its refund, and a receiver that fails three times gets each event once after retries, with the same delivery id', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, url: receiver.url('/dispute', [500, 500, 500, 200]) });
    await act(test, seller, task.id, 'accept').expect(200);
    await act(test, seller, task.id, 'deliver', { result_payload: { answer: 'wrong' } }).expect(200);
    await act(test, buyer, task.id, 'dispute', { reason: 'not what I asked' }).expect(200);
    await test.http.post(`/api/v1/admin/transactions/${task.id}/resolve`).set(admin).send({ outcome: 'refund' }).expect(200);
    for (let round = 0; round < 6; round++) {
      await deliver();
      test.clock.advanceMs(limits.webhookRetryDelayMaxMs);
    }
    await deliver();
    const requests = receiver.at('/dispute');
    const states = requests.map((request) => v10State(JSON.parse(request.body)));
    expect(states).toEqual([
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'TASK_STATE_WORKING',
      'artifact',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_CANCELED',
    ]);
    expect(new Set(requests.slice(0, 4).map((request) => request.headers['webhook-id'])).size).toBe(1);
    expect(JSON.parse(requests.at(-2)!.body).statusUpdate.metadata.marketplace.status).toBe('disputed');
  });

  it("a conversation started with a config in its send: the task at once, then its purchase's moves", async () => {
    const topic = `topic${randomUUID().slice(0, 6)}`;
    const { buyer, seller } = await agentMarket(test, '100.00', {
      title: `Translate ${topic} invoices from English to German`,
      description: `English to German translation of ${topic} invoices`,
    });
    const sent = await rpc.ok(buyer, 'SendMessage', {
      ...v10Text(`Please translate my ${topic} invoices from English to German`),
      configuration: { taskPushNotificationConfig: { url: receiver.url('/conversation') } },
    });
    await deliver();
    expect(bodies('/conversation')).toEqual([
      { task: expect.objectContaining({ id: sent.task.id, status: expect.objectContaining({ state: 'TASK_STATE_INPUT_REQUIRED' }) }) },
    ]);
    const picked = await rpc.ok(buyer, 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: sent.task.id, parts: [{ text: '1' }] },
    });
    const transactionId = picked.task.metadata.marketplace.transaction_id as string;
    expect(transactionId).toBeTruthy();
    await act(test, seller, transactionId, 'accept').expect(200);
    await deliver();
    const later = bodies('/conversation').slice(1);
    expect(later.map(v10State).at(-1)).toBe('TASK_STATE_WORKING');
    expect(later.every((body) => body.statusUpdate.taskId === sent.task.id)).toBe(true);
  });

  it("v0.1: a config in tasks/send pushes the v0.1 task under the client's own id", async () => {
    const { buyer, capability } = await agentMarket(test);
    const id = hex();
    const params = { ...v01Text(id, hex(), 'buy'), pushNotification: { url: receiver.url('/v01'), token: 'v01-token' } };
    params.message.parts = [{ type: 'data', data: { capability_id: capability.id } } as never];
    await rpc.ok(buyer, 'tasks/send', params);
    await deliver();
    const [body] = bodies('/v01');
    expect(body).toMatchObject({ id, sessionId: expect.any(String), status: { state: expect.any(String) } });
    expect(body!.kind).toBeUndefined();
    expect(receiver.at('/v01')[0]!.headers['x-a2a-notification-token']).toBe('v01-token');
    expect((await rpc.ok(buyer, 'tasks/pushNotification/get', { id })).pushNotificationConfig).toEqual({ url: receiver.url('/v01'), token: 'v01-token' });
  });

  it('stops at once when the config is deleted: what was waiting fails unsent', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'gone', url: receiver.url('/deleted') });
    await act(test, seller, task.id, 'accept').expect(200);
    await rpc.ok(buyer, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'gone' });
    await act(test, seller, task.id, 'deliver', { result_payload: { answer: 1 } }).expect(200);
    await deliver();
    expect(receiver.at('/deleted')).toEqual([]);
  });

  it("signs pushes as webhooks are signed, with the config's own secret (never shown), so a delivery id is verifiable", async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id, { taskPushNotificationConfig: { url: receiver.url('/signed') } });
    await deliver();
    const [request] = receiver.at('/signed');
    expect(request!.headers['webhook-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,/);
    expect(() => new Webhook('whsec_' + Buffer.alloc(32).toString('base64')).verify(request!.body, request!.headers as Record<string, string>)).toThrow();
    expect(JSON.parse(request!.body).task.id).toBe(task.id);
  });
});

describe('with the worker running, as in production', () => {
  it('answers an inline registration once its first push has reached the receiver', async () => {
    const { buyer, capability } = await agentMarket(test);
    const webhooks = test.runtime.engine.webhooks;
    webhooks.start(limits.webhookPollIntervalMs);
    try {
      const task = await purchase(buyer, capability.id, { taskPushNotificationConfig: { url: receiver.url('/running') } });
      // No runOnce here: the send itself waited for the push.
      expect(bodies('/running')).toEqual([{ task: expect.objectContaining({ id: task.id }) }]);
    } finally {
      webhooks.stop();
      await webhooks.idle();
    }
  });
});

describe('its owner sees it', () => {
  it("a receiver down for the whole window: the config's deliveries show as failed over REST, with every attempt; a ping or a stranger is refused", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'down', url: receiver.url('/push-down', [503]) });
    await act(test, seller, task.id, 'accept').expect(200);
    for (let elapsedMs = 0; elapsedMs <= limits.webhookDeliveryWindowMs + limits.webhookRetryDelayMaxMs; elapsedMs += limits.webhookRetryDelayMaxMs) {
      await deliver();
      test.clock.advanceMs(limits.webhookRetryDelayMaxMs);
    }
    await deliver();
    const listed = (await test.http.get('/api/v1/webhooks?kind=a2a_push').set(buyer.headers).expect(200)).body.data.items;
    expect(listed).toEqual([
      expect.objectContaining({ kind: 'a2a_push', a2a: { task_id: task.id, config_id: 'down', generation: 'v1.0' }, url: receiver.url('/push-down') }),
    ]);
    expect((await test.http.get('/api/v1/webhooks').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
    const id = listed[0].id as string;
    expect((await test.http.get(`/api/v1/webhooks/${id}`).set(buyer.headers).expect(200)).body.data.deliveries).toEqual({
      pending: 0,
      delivered: 0,
      failed: 1,
    });
    const [failed] = (await test.http.get(`/api/v1/webhooks/${id}/deliveries?status=failed`).set(buyer.headers).expect(200)).body.data.items;
    expect(failed).toMatchObject({ event_type: 'transaction.accepted', status: 'failed', last_status_code: 503 });
    expect(failed.attempt_log.length).toBe(receiver.at('/push-down').length);
    await test.http.post(`/api/v1/webhooks/${id}/ping`).set(buyer.headers).expect(404);
    await test.http.post(`/api/v1/webhooks/${id}/rotate-secret`).set(buyer.headers).expect(404);
    await test.http.get(`/api/v1/webhooks/${id}`).set(seller.headers).expect(404);
    // Deleting it over REST is deleting the config.
    await test.http.delete(`/api/v1/webhooks/${id}`).set(buyer.headers).expect(200);
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toEqual([]);
  });
});

describe('retention', () => {
  it('forgets a config a2aPushConfigRetentionMs after it was made, and a deleted one once its deliveries are past retention', async () => {
    const { buyer, capability } = await agentMarket(test);
    const task = await purchase(buyer, capability.id);
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'old', url: receiver.url('/old') });
    await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: task.id, id: 'deleted', url: receiver.url('/old') });
    await rpc.ok(buyer, 'DeleteTaskPushNotificationConfig', { taskId: task.id, id: 'deleted' });
    const count = async () =>
      Number(
        ((await test.runtime.engine.dependencies.db('webhook_subscriptions').where({ a2a_task_id: task.id }).count('* as count')) as { count: string }[])[0]!
          .count,
      );
    expect(await count()).toBe(2);
    test.clock.advanceMs(limits.webhookDeliveryRetentionMs + 1);
    expect((await test.runtime.engine.retention.runOnce()).webhookSubscriptions).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(1);
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs.map((config: Json) => config.id)).toEqual(['old']);
    test.clock.advanceMs(limits.a2aPushConfigRetentionMs);
    await test.runtime.engine.retention.runOnce();
    expect(await count()).toBe(0);
    expect((await rpc.ok(buyer, 'ListTaskPushNotificationConfigs', { taskId: task.id })).configs).toEqual([]);
  });
});
