import { randomUUID } from 'node:crypto';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk-v03/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../helpers/actors.ts';
import { act, agentMarket, balance } from '../../helpers/market.ts';
import { startReceiver } from '../../helpers/receiver.ts';
import { type CompatClient, dataPartFlow, textFlow } from './flows.ts';
import { type ListeningApp, fetchAs, startListeningApp, wrongCredentials } from './harness.ts';
import { kindMessage, viewOfKindEvent, viewOfKindTask } from './kind-views.ts';

/** @a2a-js/sdk 0.3.14 (A2A v0.3: message/send, kind parts), through its ClientFactory as its README shows. */
let app: ListeningApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  app = await startListeningApp();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

/** One client per actor: the factory's transport carries the actor's credentials on every request. */
const clients = new Map<Actor | null, Promise<Client>>();
function clientFor(actor: Actor | null): Promise<Client> {
  if (!clients.has(actor)) {
    const transport = new JsonRpcTransportFactory({ fetchImpl: fetchAs(actor) });
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [transport] }));
    clients.set(actor, factory.createFromUrl(app.baseUrl));
  }
  return clients.get(actor)!;
}

const adapter: CompatClient = {
  states: { submitted: 'submitted', working: 'working', inputRequired: 'input-required', completed: 'completed', canceled: 'canceled' },
  newContextId: () => undefined,
  conversationContextId: () => `unique-chat-id-${randomUUID().slice(0, 8)}`,
  clientNamesTasks: false,
  userRole: 'user',
  send: async (actor, message) => viewOfKindTask(await (await clientFor(actor)).sendMessage(kindMessage(message))),
  async *stream(actor, message) {
    for await (const event of (await clientFor(actor)).sendMessageStream(kindMessage(message))) yield viewOfKindEvent(event);
  },
  get: async (actor, id, historyLength) =>
    viewOfKindTask(await (await clientFor(actor)).getTask({ id, ...(historyLength === undefined ? {} : { historyLength }) })),
};

describe('@a2a-js/sdk 0.3.14', () => {
  it('discovers the card and reads a v0.3 JSON-RPC interface with OpenAPI-style security schemes', async () => {
    const card = await (await clientFor(null)).getAgentCard();
    expect(card.url).toBe(`${app.baseUrl}/api/v1/rpc`);
    expect(card.preferredTransport ?? 'JSONRPC').toBe('JSONRPC');
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills.length).toBeGreaterThan(0);
    expect(card.securitySchemes?.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Api-Key' });
  });

  dataPartFlow(
    () => app,
    () => adapter,
  );
  textFlow(
    () => app,
    () => adapter,
    (number) => `#${number}`,
  );

  it('buys by data part, reads it, cancels it, and surfaces a second cancel as TaskNotCancelableError', async () => {
    const { buyer, capability } = await agentMarket(app.test);
    const client = await clientFor(buyer);
    const bought = viewOfKindTask(await client.sendMessage(kindMessage({ data: { capability_id: capability.id } })));
    expect(bought).toMatchObject({ state: 'submitted', marketplace: { status: 'frozen', transaction_id: bought.id } });
    expect(await client.getTask({ id: bought.id })).toMatchObject({ kind: 'task', id: bought.id, contextId: bought.contextId, status: { state: 'submitted' } });
    expect(await client.cancelTask({ id: bought.id })).toMatchObject({
      id: bought.id,
      status: { state: 'canceled' },
      metadata: { marketplace: { status: 'cancelled_by_buyer' } },
    });
    expect(await balance(app.test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    await expect(client.cancelTask({ id: bought.id })).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
      errorResponse: { error: { code: -32002, data: { code: 4090 } } },
    });
  });

  it('surfaces an unknown task on get as TaskNotFoundError', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    await expect((await clientFor(buyer)).getTask({ id: randomUUID() })).rejects.toMatchObject({
      name: 'TaskNotFoundError',
      errorResponse: { error: { code: -32001, data: { code: 4040 } } },
    });
  });

  it('surfaces an unknown task on resubscribe from the SSE error frame, with TaskNotFoundError as the cause', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const resubscribe = async () => {
      for await (const event of (await clientFor(buyer)).resubscribeTask({ id: randomUUID() }))
        throw new Error(`no event expected, got ${JSON.stringify(event)}`);
    };
    await expect(resubscribe()).rejects.toMatchObject({ message: expect.stringContaining('(Code: -32001)'), cause: { name: 'TaskNotFoundError' } });
  });

  it('surfaces wrong credentials as a JSON-RPC error naming the code, not a crash', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const client = await clientFor(wrongCredentials(buyer));
    // Readable: the client's error message names the JSON-RPC code (-32110, "authentication required").
    await expect(client.getTask({ id: randomUUID() })).rejects.toThrow(/-32110/);
  });
});

describe('push notifications through @a2a-js/sdk 0.3.14', () => {
  it('sets, gets, lists and deletes configs; each push is the whole v0.3 task with the token header', async () => {
    const { buyer, seller, capability } = await agentMarket(app.test);
    const client = await clientFor(buyer);
    expect((await client.getAgentCard()).capabilities.pushNotifications).toBe(true);
    const bought = viewOfKindTask(await client.sendMessage(kindMessage({ data: { capability_id: capability.id } })));
    const url = receiver.url('/sdk03');
    const set = await client.setTaskPushNotificationConfig({ taskId: bought.id, pushNotificationConfig: { url, token: 'v03-token' } });
    expect(set).toEqual({ taskId: bought.id, pushNotificationConfig: { id: bought.id, url, token: 'v03-token' } });
    expect(await client.getTaskPushNotificationConfig({ id: bought.id })).toEqual(set);
    expect(await client.listTaskPushNotificationConfig({ id: bought.id })).toEqual([set]);

    await act(app.test, seller, bought.id, 'accept').expect(200);
    await app.test.runtime.engine.webhooks.runOnce();
    const [push] = receiver.at('/sdk03');
    expect(JSON.parse(push!.body)).toMatchObject({ kind: 'task', id: bought.id, contextId: bought.contextId, status: { state: 'working' } });
    expect(push!.headers['x-a2a-notification-token']).toBe('v03-token');

    await client.deleteTaskPushNotificationConfig({ id: bought.id, pushNotificationConfigId: bought.id });
    expect(await client.listTaskPushNotificationConfig({ id: bought.id })).toEqual([]);
    await expect(client.getTaskPushNotificationConfig({ id: randomUUID() })).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });

  it("registers a config given in message/send's configuration: the task is pushed first", async () => {
    const { buyer, capability } = await agentMarket(app.test);
    const client = await clientFor(buyer);
    const url = receiver.url('/sdk03-inline');
    const sent = await client.sendMessage({
      ...kindMessage({ data: { capability_id: capability.id } }),
      configuration: { pushNotificationConfig: { url }, blocking: true },
    });
    const bought = viewOfKindTask(sent);
    await app.test.runtime.engine.webhooks.runOnce();
    expect(receiver.at('/sdk03-inline').map((request) => JSON.parse(request.body))).toEqual([expect.objectContaining({ kind: 'task', id: bought.id })]);
  });
});
