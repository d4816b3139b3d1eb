import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Message, type Part, Role, type SendMessageRequest, StreamResponse, type Task, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../helpers/actors.ts';
import { startTestApp, type TestApp } from '../../helpers/app.ts';
import { act, agentMarket, balance, createCapability } from '../../helpers/market.ts';
import { type ConversationClient, type Outgoing, type TaskView, textFlow } from './flows.ts';
import { wrongCredentials } from './harness.ts';
import { startReceiver } from '../../helpers/receiver.ts';

/** The official A2A client (@a2a-js/sdk, v1.0 protocol) against a listening server. */
let test: TestApp;
let server: Server;
let baseUrl: string;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  receiver = await startReceiver();
  // The card's URLs come from PUBLIC_BASE_URL, so the port is chosen before the app is built.
  let app: TestApp['app'] | null = null;
  server = createServer((request, response) => app!(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Pushes go to a receiver on loopback, which only the operator's private-address setting allows.
  test = await startTestApp({ PUBLIC_BASE_URL: baseUrl, CALLBACK_ALLOW_PRIVATE: 'true' });
  app = test.app;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await test.close();
  await receiver.close();
});

/** Credentials ride on every request through the transport's fetch, as a real agent would add them. */
const fetchAs =
  (actor: Actor | null): typeof fetch =>
  (input, init) => {
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(actor?.headers ?? {})) headers.set(name, value);
    return fetch(input, { ...init, headers });
  };

function factoryFor(actor: Actor | null, legacyCompat = false) {
  const transport = new JsonRpcTransportFactory({ fetchImpl: fetchAs(actor), ...(legacyCompat ? { legacyCompat: { enabled: true } } : {}) });
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [transport] }));
}

const clientFor = (actor: Actor | null) => factoryFor(actor).createFromUrl(baseUrl);

function message(data: Record<string, unknown>, options: { text?: string; taskId?: string } = {}): SendMessageRequest {
  const parts = [
    ...(options.text ? [{ content: { $case: 'text' as const, value: options.text }, metadata: undefined, filename: '', mediaType: '' }] : []),
    { content: { $case: 'data' as const, value: data }, metadata: undefined, filename: '', mediaType: '' },
  ];
  const body: Message = {
    messageId: randomUUID(),
    contextId: '',
    taskId: options.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message: body, configuration: undefined, metadata: undefined };
}

function asTask(result: unknown): Task {
  expect(result).toHaveProperty('status');
  return result as Task;
}

const marketplace = (task: Task) => (task.metadata as { marketplace: Record<string, unknown> }).marketplace;

describe('@a2a-js/sdk client', () => {
  it('discovers the card and picks the v1.0 JSON-RPC interface', async () => {
    const client = await clientFor(null);
    expect(client.protocolVersion).toBe('1.0');
    const card = await client.getAgentCard();
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.supportedInterfaces?.[0]).toMatchObject({ url: `${baseUrl}/api/v1/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect(card.skills.length).toBeGreaterThan(0);
  });

  it("finds the card from the endpoint's own URL too, with or without a trailing slash", async () => {
    for (const url of [`${baseUrl}/api/v1/rpc`, `${baseUrl}/api/v1/rpc/`]) {
      const client = await factoryFor(null).createFromUrl(url);
      expect(client.protocolVersion, url).toBe('1.0');
      expect((await client.getAgentCard()).supportedInterfaces?.[0]?.url, url).toBe(`${baseUrl}/api/v1/rpc`);
    }
  });

  it('buys, reads, streams to delivery while the seller acts over REST, confirms, and lists', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const client = await clientFor(buyer);

    const bought = asTask(await client.sendMessage(message({ capability_id: capability.id }, { text: 'one summary please' })));
    expect(bought.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    expect(marketplace(bought)).toMatchObject({ status: 'frozen', price: '10.00', transaction_id: bought.id });
    const read = await client.getTask({ tenant: '', id: bought.id });
    expect(read).toMatchObject({ id: bought.id, contextId: bought.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED } });

    const events: StreamResponse[] = [];
    const stream = client.sendMessageStream(message({ capability_id: capability.id }));
    for await (const event of stream) {
      events.push(event);
      if (events.length === 1) {
        const id = (event.payload?.value as Task).id;
        await act(test, seller, id, 'accept').expect(200);
        await act(test, seller, id, 'deliver', { result_payload: { summary: 'short' } }).expect(200);
      }
    }
    expect(events.map((event) => event.payload?.$case)).toEqual(['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
    const streamed = events[0]!.payload!.value as Task;
    expect(streamed.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const states = events.slice(1).flatMap((event) => (event.payload?.$case === 'statusUpdate' ? [event.payload.value.status?.state] : []));
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED]);
    const artifact = events[2]!.payload!.$case === 'artifactUpdate' ? events[2]!.payload!.value.artifact : undefined;
    expect(artifact?.parts[0]?.content).toEqual({ $case: 'data', value: { summary: 'short' } });

    const confirmed = asTask(await client.sendMessage(message({ action: 'confirm' }, { taskId: streamed.id })));
    expect(confirmed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(marketplace(confirmed).status).toBe('settled');
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });

    // A task that has ended takes no more messages nor subscriptions (v1.0, 3.1.1 and 3.1.6).
    await expect(client.sendMessage(message({ action: 'confirm' }, { taskId: streamed.id }))).rejects.toMatchObject({
      name: 'UnsupportedOperationError',
      data: [{ reason: 'UNSUPPORTED_OPERATION', domain: 'a2a-protocol.org' }, { value: { code: 4090, data: { status: 'settled', action: 'confirm' } } }],
    });
    const resubscribe = async () => {
      for await (const event of client.resubscribeTask({ tenant: '', id: streamed.id })) expect(event).toBeUndefined();
    };
    await expect(resubscribe()).rejects.toMatchObject({ name: 'UnsupportedOperationError' });
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });

    const listed = await client.listTasks({
      tenant: '',
      contextId: '',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed.tasks.map((task) => task.id).sort()).toEqual([bought.id, streamed.id].sort());
    expect(listed.totalSize).toBe(2);
  });

  it("cancels another task, and surfaces the A2A errors as the SDK's error classes", async () => {
    const { buyer, capability } = await agentMarket(test);
    const client = await clientFor(buyer);
    const bought = asTask(await client.sendMessage(message({ capability_id: capability.id })));
    const cancelled = await client.cancelTask({ tenant: '', id: bought.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });

    // v1.0 errors carry a google.rpc.ErrorInfo first, then the marketplace envelope (specification 9.5).
    const details = (reason: string, code: number) => [
      { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org', metadata: { code: String(code) } },
      { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { code } },
    ];
    await expect(client.cancelTask({ tenant: '', id: bought.id, metadata: undefined })).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
      data: details('TASK_NOT_CANCELABLE', 4090),
    });
    await expect(client.getTask({ tenant: '', id: randomUUID() })).rejects.toMatchObject({ name: 'TaskNotFoundError', data: details('TASK_NOT_FOUND', 4040) });
    await expect(client.sendMessage(message({ capability_id: randomUUID() }))).rejects.toMatchObject({ data: details('TASK_NOT_FOUND', 4040) });
  });

  it('buys with words: a text-only conversation, a pick by number, the seller over REST, confirm in words', async () => {
    const { buyer, seller } = await agentMarket(test);
    const capability = await createCapability(test, seller, { title: 'Proofread sdkwords essays', description: 'Careful proofreading of essays' });
    const client = await clientFor(buyer);
    const say = (text: string, taskId = ''): SendMessageRequest => ({
      tenant: '',
      configuration: undefined,
      metadata: undefined,
      message: {
        messageId: randomUUID(),
        contextId: '',
        taskId,
        role: Role.ROLE_USER,
        parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
        metadata: undefined,
        extensions: [],
        referenceTaskIds: [],
      },
    });
    const offered = asTask(await client.sendMessage(say('Please proofread my sdkwords essays')));
    expect(offered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const data = offered.status?.message?.parts.find((part) => part.content?.$case === 'data')?.content?.value as {
      candidates: { number: number; capability_id: string }[];
    };
    const number = data.candidates.find((candidate) => candidate.capability_id === capability.id)!.number;
    const picked = asTask(await client.sendMessage(say(String(number), offered.id)));
    expect(picked).toMatchObject({ id: offered.id, status: { state: TaskState.TASK_STATE_SUBMITTED } });
    const transactionId = marketplace(picked).transaction_id as string;
    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { proofread: true } }).expect(200);
    const confirmed = asTask(await client.sendMessage(say('confirm', offered.id)));
    expect(confirmed.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const read = await client.getTask({ tenant: '', id: offered.id, historyLength: 2 });
    expect(read.history.map((entry) => entry.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });
  });

  it('surfaces an A2A-Version the server does not speak as VersionNotSupportedError, and nothing is bought', async () => {
    const { buyer, capability } = await agentMarket(test);
    // A newer client than this server: the same SDK, announcing a version from the future.
    const fromTheFuture: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('A2A-Version', '2.0');
      return fetchAs(buyer)(input, { ...init, headers });
    };
    const transport = new JsonRpcTransportFactory({ fetchImpl: fromTheFuture });
    const client = await new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [transport] })).createFromUrl(baseUrl);
    await expect(client.sendMessage(message({ capability_id: capability.id }))).rejects.toMatchObject({
      name: 'VersionNotSupportedError',
      data: [{ reason: 'VERSION_NOT_SUPPORTED', metadata: { requested_version: '2.0', supported_versions: '0.1,0.2,0.3,1.0' } }, {}],
    });
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
  });

  it('reports missing credentials as a JSON-RPC auth error', async () => {
    const client = await clientFor(null);
    await expect(client.getTask({ tenant: '', id: randomUUID() })).rejects.toMatchObject({ envelopeCode: -32110, data: { code: 4010 } });
  });

  it("serves a v0.3 client too: the SDK's legacy transport parses the v0.3 shapes", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const card = await (await clientFor(null)).getAgentCard();
    const legacyCard = { ...card, supportedInterfaces: card.supportedInterfaces.filter((entry) => entry.protocolVersion === '0.3') };
    const client: Client = await factoryFor(buyer, true).createFromAgentCard(legacyCard);
    expect(client.protocolVersion).toBe('0.3');

    const bought = asTask(await client.sendMessage(message({ capability_id: capability.id })));
    expect(bought.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    await act(test, seller, bought.id, 'accept').expect(200);
    await act(test, seller, bought.id, 'deliver', { result_payload: { ok: true } }).expect(200);
    const delivered = await client.getTask({ tenant: '', id: bought.id });
    expect(delivered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(delivered.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'data', value: { ok: true } });
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(message({ action: 'confirm' }, { taskId: bought.id }))) events.push(event);
    expect(events).toHaveLength(1);
    expect((events[0]!.payload!.value as Task).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});

/**
 * The rest of the compatibility suite (test/protocol/a2a-compat/flows.ts) for the 1.3 client: the data-part
 * steps are the tests above; the text conversation and the errors below complete the list.
 */
function request(outgoing: Outgoing): SendMessageRequest {
  const part = (content: NonNullable<Part['content']>): Part => ({ content, metadata: undefined, filename: '', mediaType: '' });
  const parts = [
    ...(outgoing.text !== undefined ? [part({ $case: 'text', value: outgoing.text })] : []),
    ...(outgoing.data ? [part({ $case: 'data', value: outgoing.data })] : []),
  ];
  const body: Message = {
    messageId: randomUUID(),
    contextId: outgoing.contextId ?? '',
    taskId: outgoing.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message: body, configuration: undefined, metadata: undefined };
}

const textsOf = (parts: Part[] = []) => parts.flatMap((part) => (part.content?.$case === 'text' ? [part.content.value] : []));
const dataOf = (parts: Part[] = []) => parts.flatMap((part) => (part.content?.$case === 'data' ? [part.content.value as unknown] : []));

function view(task: Task): TaskView {
  return {
    id: task.id,
    contextId: task.contextId,
    state: TaskState[task.status!.state],
    marketplace: marketplace(task),
    texts: textsOf(task.status?.message?.parts),
    data: dataOf(task.status?.message?.parts),
    artifactData: task.artifacts.flatMap((artifact) => dataOf(artifact.parts)),
    history: task.history.map((entry) => ({ role: Role[entry.role], texts: textsOf(entry.parts), data: dataOf(entry.parts) })),
  };
}

const adapter: ConversationClient = {
  states: {
    submitted: 'TASK_STATE_SUBMITTED',
    working: 'TASK_STATE_WORKING',
    inputRequired: 'TASK_STATE_INPUT_REQUIRED',
    completed: 'TASK_STATE_COMPLETED',
    canceled: 'TASK_STATE_CANCELED',
  },
  newContextId: () => undefined,
  conversationContextId: () => `chat ${randomUUID().slice(0, 8)}`,
  clientNamesTasks: false,
  userRole: 'ROLE_USER',
  send: async (actor, outgoing) => view(asTask(await (await clientFor(actor)).sendMessage(request(outgoing)))),
  get: async (actor, id, historyLength) => view(await (await clientFor(actor)).getTask({ tenant: '', id, historyLength })),
};

describe('@a2a-js/sdk 1.3 in the compatibility suite', () => {
  textFlow(
    () => ({ test }),
    () => adapter,
    (number) => `buy ${number}`,
  );

  it('surfaces an unknown task on resubscribe as TaskNotFoundError', async () => {
    const { buyer } = await agentMarket(test, '0');
    const resubscribe = async () => {
      for await (const event of (await clientFor(buyer)).resubscribeTask({ tenant: '', id: randomUUID() }))
        throw new Error(`no event expected, got ${JSON.stringify(event)}`);
    };
    await expect(resubscribe()).rejects.toMatchObject({ name: 'TaskNotFoundError', data: [{ reason: 'TASK_NOT_FOUND' }, { value: { code: 4040 } }] });
  });

  it('surfaces wrong credentials as a JSON-RPC auth error', async () => {
    const { buyer } = await agentMarket(test, '0');
    const client = await factoryFor(wrongCredentials(buyer)).createFromUrl(baseUrl);
    await expect(client.getTask({ tenant: '', id: randomUUID() })).rejects.toMatchObject({ envelopeCode: -32110, data: { code: 4010 } });
  });
});

describe('push notifications through @a2a-js/sdk 1.3', () => {
  it("creates, reads, lists and deletes configs; each push parses as the SDK's StreamResponse, with the configured Authorization", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const client = await clientFor(buyer);
    const card = await client.getAgentCard();
    expect(card.capabilities?.pushNotifications).toBe(true);
    const bought = asTask(await client.sendMessage(message({ capability_id: capability.id })));
    const url = receiver.url('/sdk13');
    const created = await client.createTaskPushNotificationConfig({
      tenant: '',
      id: 'sdk-hook',
      taskId: bought.id,
      url,
      token: 'sdk-token',
      authentication: { scheme: 'Bearer', credentials: 'sdk-credentials' },
    });
    expect(created).toMatchObject({ id: 'sdk-hook', taskId: bought.id, url, token: 'sdk-token', authentication: { scheme: 'Bearer' } });
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: bought.id, id: 'sdk-hook' })).toMatchObject({ id: 'sdk-hook', url });
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: bought.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((config) => config.id)).toEqual(['sdk-hook']);

    await act(test, seller, bought.id, 'accept').expect(200);
    await act(test, seller, bought.id, 'deliver', { result_payload: { summary: 'pushed' } }).expect(200);
    await test.runtime.engine.webhooks.runOnce();
    const pushes = receiver.at('/sdk13').map((request) => StreamResponse.fromJSON(JSON.parse(request.body)));
    expect(pushes.map((push) => push.payload?.$case)).toEqual(['statusUpdate', 'artifactUpdate', 'statusUpdate']);
    const states = pushes.flatMap((push) => (push.payload?.$case === 'statusUpdate' ? [push.payload.value.status?.state] : []));
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_INPUT_REQUIRED]);
    const artifact = pushes[1]!.payload!.$case === 'artifactUpdate' ? pushes[1]!.payload!.value : undefined;
    expect(artifact?.taskId).toBe(bought.id);
    expect(artifact?.artifact?.parts[0]?.content).toEqual({ $case: 'data', value: { summary: 'pushed' } });
    expect(receiver.at('/sdk13').every((request) => request.headers.authorization === 'Bearer sdk-credentials')).toBe(true);

    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: bought.id, id: 'sdk-hook' });
    await expect(client.getTaskPushNotificationConfig({ tenant: '', taskId: bought.id, id: 'sdk-hook' })).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    await expect(
      client.createTaskPushNotificationConfig({ tenant: '', id: '', taskId: randomUUID(), url, token: '', authentication: undefined }),
    ).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });

  it('registers a config inside sendMessage: the task arrives first, as a StreamResponse task', async () => {
    const { buyer, capability } = await agentMarket(test);
    const client = await clientFor(buyer);
    const url = receiver.url('/sdk13-inline');
    const request = message({ capability_id: capability.id });
    request.configuration = {
      acceptedOutputModes: [],
      taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url, token: 'inline', authentication: undefined },
      historyLength: undefined,
      returnImmediately: false,
    };
    const bought = asTask(await client.sendMessage(request));
    await test.runtime.engine.webhooks.runOnce();
    const [first] = receiver.at('/sdk13-inline').map((each) => StreamResponse.fromJSON(JSON.parse(each.body)));
    expect(first?.payload?.$case).toBe('task');
    expect((first!.payload!.value as Task).id).toBe(bought.id);
    expect(receiver.at('/sdk13-inline')[0]!.headers['x-a2a-notification-token']).toBe('inline');
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: bought.id, pageSize: 0, pageToken: '' });
    expect(listed.configs).toEqual([expect.objectContaining({ taskId: bought.id, url, token: 'inline' })]);
  });

  it("does the same over the SDK's v0.3 transport (tasks/pushNotificationConfig/*)", async () => {
    const { buyer, capability } = await agentMarket(test);
    const card = await (await clientFor(null)).getAgentCard();
    const legacyCard = { ...card, supportedInterfaces: card.supportedInterfaces.filter((entry) => entry.protocolVersion === '0.3') };
    const client: Client = await factoryFor(buyer, true).createFromAgentCard(legacyCard);
    const bought = asTask(await client.sendMessage(message({ capability_id: capability.id })));
    const url = receiver.url('/sdk13-legacy');
    const created = await client.createTaskPushNotificationConfig({ tenant: '', id: 'legacy', taskId: bought.id, url, token: '', authentication: undefined });
    expect(created).toMatchObject({ id: 'legacy', taskId: bought.id, url });
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: bought.id, id: 'legacy' })).toMatchObject({ id: 'legacy', url });
    expect(
      (await client.listTaskPushNotificationConfig({ tenant: '', taskId: bought.id, pageSize: 0, pageToken: '' })).configs.map((config) => config.id),
    ).toEqual(['legacy']);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: bought.id, id: 'legacy' });
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: bought.id, pageSize: 0, pageToken: '' })).configs).toEqual([]);
  });
});
