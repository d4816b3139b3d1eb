import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { rpcCaller } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * Deliveries that no retry can help (issue 28, point 6; docs/webhooks.md "Delivery"): an address
 * the guard refuses, and a header value no HTTP request can carry (a push config's token or
 * credentials with a line break or a character outside Latin-1, as a row stored before such
 * values were refused may hold). Each fails at its first attempt, which is recorded for its owner
 * to read, and is never tried again, instead of being retried for the 24 hours of the window.
 */
let strict: TestApp;
let open: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  [strict, open, receiver] = await Promise.all([startTestApp(), startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' }), startReceiver()]);
});
afterAll(async () => {
  await receiver.close();
  await Promise.all([strict.close(), open.close()]);
});

interface Listed {
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  finished_at: string | null;
  last_error: string | null;
  attempt_log: { number: number; error: string | null; status_code: number | null }[];
}
const deliveriesOf = async (test: TestApp, actor: Actor, hookId: string) =>
  (await test.http.get(`/api/v1/webhooks/${hookId}/deliveries`).set(actor.headers).expect(200)).body.data.items as Listed[];

/** Runs the worker now, and again once the whole retry window has passed: a retry would have happened by then. */
async function deliverAndWaitOutTheWindow(test: TestApp) {
  await test.runtime.engine.webhooks.runOnce();
  test.clock.advanceMs(limits.webhookDeliveryWindowMs + limits.webhookRetryDelayMaxMs);
  await test.runtime.engine.webhooks.runOnce();
}

describe('a delivery the address guard refuses', () => {
  it('fails at its first attempt, the attempt recorded with the setting that allows it, and is not tried again', async () => {
    const owner = await createAgent(strict);
    const hook = (
      await strict.http
        .post('/api/v1/webhooks')
        .set(owner.headers)
        .send({ url: receiver.url('/refused'), event_types: ['*'] })
        .expect(201)
    ).body.data;
    await strict.http.post(`/api/v1/webhooks/${hook.id}/ping`).set(owner.headers).expect(201);
    await strict.runtime.engine.webhooks.runOnce();

    const [delivery] = await deliveriesOf(strict, owner, hook.id);
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null, last_status_code: null });
    expect(delivery!.finished_at).not.toBeNull();
    expect(delivery!.attempt_log).toEqual([
      expect.objectContaining({ number: 1, status_code: null, error: expect.stringContaining('CALLBACK_ALLOW_PRIVATE') }),
    ]);
    expect((await strict.http.get(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(200)).body.data.deliveries).toEqual({
      pending: 0,
      delivered: 0,
      failed: 1,
    });

    await deliverAndWaitOutTheWindow(strict);
    expect((await deliveriesOf(strict, owner, hook.id))[0]).toMatchObject({ status: 'failed', attempts: 1 });
    expect(receiver.at('/refused')).toEqual([]);
  });
});

describe('a push config whose headers cannot be sent', () => {
  it('fails at its first attempt, naming the header but not its value, while a config beside it with a good token is delivered', async () => {
    const rpc = rpcCaller(open);
    const { buyer, seller, capability } = await agentMarket(open);
    const sent = await rpc.ok(buyer, 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
    });
    const taskId = sent.task.id as string;
    const tokens = { '/line-break': 'good-token', '/wide': 'good-token', '/credentials': null, '/fine': 'good-token' } as const;
    for (const [path, token] of Object.entries(tokens)) {
      await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', {
        taskId,
        id: path.slice(1),
        url: receiver.url(path),
        ...(token ? { token } : { authentication: { scheme: 'Bearer', credentials: 'fine' } }),
      });
    }
    // As rows stored before such values were refused when set: a line break (a header of the
    // sender's choosing would follow it), a character outside Latin-1, a credential with a line break.
    const { db } = open.runtime.engine.dependencies;
    const configs = db('webhook_subscriptions').where({ kind: 'a2a_push', a2a_task_name: taskId });
    await configs.clone().where({ a2a_config_id: 'line-break' }).update({ a2a_token: 'secret-part\r\nX-Injected: yes' });
    await configs.clone().where({ a2a_config_id: 'wide' }).update({ a2a_token: 'secret-part-€' });
    await configs.clone().where({ a2a_config_id: 'credentials' }).update({ a2a_auth_credentials: 'secret-part\nX-Injected: yes' });
    await act(open, seller, taskId, 'accept').expect(200);
    await deliverAndWaitOutTheWindow(open);

    const listed = (await open.http.get('/api/v1/webhooks?kind=a2a_push').set(buyer.headers).expect(200)).body.data.items as {
      id: string;
      a2a: { config_id: string };
    }[];
    const idOf = (configId: string) => listed.find((item) => item.a2a.config_id === configId)!.id;
    for (const [configId, header] of [
      ['line-break', 'X-A2A-Notification-Token'],
      ['wide', 'X-A2A-Notification-Token'],
      ['credentials', 'Authorization'],
    ] as const) {
      const deliveries = await deliveriesOf(open, buyer, idOf(configId));
      expect(deliveries.length, configId).toBeGreaterThan(0);
      for (const delivery of deliveries) {
        expect(delivery, configId).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null, last_status_code: null });
        expect(delivery.attempt_log, configId).toEqual([expect.objectContaining({ number: 1, error: expect.stringContaining(header) })]);
        expect(delivery.last_error).not.toContain('secret-part');
      }
      expect(receiver.at(`/${configId}`)).toEqual([]);
    }
    expect((await deliveriesOf(open, buyer, idOf('fine'))).map((delivery) => delivery.status)).toContain('delivered');
    expect(receiver.at('/fine').length).toBeGreaterThan(0);
  });
});
