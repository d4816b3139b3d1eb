import { randomUUID } from 'node:crypto';
import { A2AClient } from '@a2a-js/sdk-v02/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { act, agentMarket, balance } from '../../helpers/market.ts';
import { startReceiver } from '../../helpers/receiver.ts';
import { type CompatClient, dataPartFlow, textFlow } from './flows.ts';
import { type ListeningApp, runAs, startListeningApp, streamAs, wrapGlobalFetch, wrongCredentials } from './harness.ts';
import { kindMessage, viewOfKindEvent, viewOfKindTask } from './kind-views.ts';

/**
 * @a2a-js/sdk 0.2.5 (A2A v0.2: message/send, kind parts). Its A2AClient reads the card at
 * /.well-known/agent.json, takes the endpoint from the card's `url`, answers JSON-RPC errors as
 * error responses (it throws only for transport failures) and calls the global fetch, with no
 * way to add headers: an agent using it wraps the global fetch, as wrapGlobalFetch() does.
 */
let app: ListeningApp;
let client: A2AClient;
let restoreFetch: () => void;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
  app = await startListeningApp();
  restoreFetch = wrapGlobalFetch();
  client = new A2AClient(app.baseUrl);
});
afterAll(async () => {
  restoreFetch();
  await app.close();
  await receiver.close();
});

/** A send's or read's result; an error response fails the step with its code and message. */
function resultOf<T>(response: { result?: T; error?: { code: number; message: string } }): T {
  if (response.error) throw new Error(`JSON-RPC error ${response.error.code}: ${response.error.message}`);
  return response.result!;
}

const adapter: CompatClient = {
  states: { submitted: 'submitted', working: 'working', inputRequired: 'input-required', completed: 'completed', canceled: 'canceled' },
  newContextId: () => undefined,
  conversationContextId: () => `pagination-test-${Date.now()}`,
  clientNamesTasks: false,
  userRole: 'user',
  send: async (actor, message) => viewOfKindTask(resultOf(await runAs(actor, () => client.sendMessage(kindMessage(message))))),
  async *stream(actor, message) {
    for await (const event of streamAs(actor, client.sendMessageStream(kindMessage(message)))) yield viewOfKindEvent(event);
  },
  get: async (actor, id, historyLength) =>
    viewOfKindTask(resultOf(await runAs(actor, () => client.getTask({ id, ...(historyLength === undefined ? {} : { historyLength }) })))),
};

describe('@a2a-js/sdk 0.2.5', () => {
  it('discovers the card at the legacy path and takes the endpoint from its url', async () => {
    const card = await client.getAgentCard();
    expect(card.url).toBe(`${app.baseUrl}/api/v1/rpc`);
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills.length).toBeGreaterThan(0);
  });

  dataPartFlow(
    () => app,
    () => adapter,
  );
  textFlow(
    () => app,
    () => adapter,
    (number) => String(number),
  );

  it('buys by data part, reads it, cancels it, and answers a second cancel with the -32002 error response', async () => {
    const { buyer, capability } = await agentMarket(app.test);
    const bought = await adapter.send(buyer, { data: { capability_id: capability.id } });
    expect(bought).toMatchObject({ state: 'submitted', marketplace: { status: 'frozen', transaction_id: bought.id } });
    expect(await adapter.get(buyer, bought.id)).toMatchObject({ id: bought.id, contextId: bought.contextId, state: 'submitted' });
    const cancelled = resultOf(await runAs(buyer, () => client.cancelTask({ id: bought.id })));
    expect(cancelled).toMatchObject({
      kind: 'task',
      id: bought.id,
      status: { state: 'canceled' },
      metadata: { marketplace: { status: 'cancelled_by_buyer' } },
    });
    expect(await balance(app.test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const again = await runAs(buyer, () => client.cancelTask({ id: bought.id }));
    expect(client.isErrorResponse(again)).toBe(true);
    expect(again).toMatchObject({ error: { code: -32002, message: expect.any(String), data: { code: 4090 } } });
  });

  it('answers get of an unknown task with the -32001 error response', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    expect(await runAs(buyer, () => client.getTask({ id: randomUUID() }))).toMatchObject({ error: { code: -32001, data: { code: 4040 } } });
  });

  it('reads an unknown task on resubscribe from the SSE error frame', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const resubscribe = async () => {
      for await (const event of streamAs(buyer, client.resubscribeTask({ id: randomUUID() })))
        throw new Error(`no event expected, got ${JSON.stringify(event)}`);
    };
    await expect(resubscribe()).rejects.toThrow(/^SSE event contained an error: .+ \(Code: -32001\)/);
  });

  it('reports wrong credentials readably: the error names the JSON-RPC code, the client does not crash on the body', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const outcome = await runAs(wrongCredentials(buyer), () => client.getTask({ id: randomUUID() })).then(
      (response) => JSON.stringify(response),
      (error: Error) => `${error.name}: ${error.message}`,
    );
    expect(outcome).toContain('-32110');
  });
});

describe('push notifications through @a2a-js/sdk 0.2.5', () => {
  it('sets and gets a config (its only two methods), and the push is the v0.2 task', async () => {
    const { buyer, seller, capability } = await agentMarket(app.test);
    expect((await client.getAgentCard()).capabilities.pushNotifications).toBe(true);
    const bought = await adapter.send(buyer, { data: { capability_id: capability.id } });
    const url = receiver.url('/sdk02');
    const set = resultOf(await runAs(buyer, () => client.setTaskPushNotificationConfig({ taskId: bought.id, pushNotificationConfig: { url, token: 'v02' } })));
    expect(set).toEqual({ taskId: bought.id, pushNotificationConfig: { id: bought.id, url, token: 'v02' } });
    expect(resultOf(await runAs(buyer, () => client.getTaskPushNotificationConfig({ id: bought.id })))).toEqual(set);
    await act(app.test, seller, bought.id, 'accept').expect(200);
    await app.test.runtime.engine.webhooks.runOnce();
    expect(receiver.at('/sdk02').map((request) => JSON.parse(request.body))).toEqual([
      expect.objectContaining({ kind: 'task', id: bought.id, status: expect.objectContaining({ state: 'working' }) }),
    ]);
    expect(await runAs(buyer, () => client.getTaskPushNotificationConfig({ id: randomUUID() }))).toMatchObject({ error: { code: -32001 } });
  });
});
