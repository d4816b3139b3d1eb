import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../../helpers/actors.ts';
import { act, agentMarket, balance } from '../../helpers/market.ts';
import { startReceiver } from '../../helpers/receiver.ts';
import { pushedTask } from './v01-models.ts';
import { type CompatClient, type EventView, type Outgoing, type TaskView, dataPartFlow, textFlow } from './flows.ts';
import { type ListeningApp, startListeningApp, wrongCredentials } from './harness.ts';
import { A2AClientHTTPError, SamplesClient, hexId, resolveAgentCard, taskSendParams } from './v01-client.ts';
import type { AgentCard, Message, StreamingResponse, Task, TaskResponse } from './v01-models.ts';

/** The original A2A samples' wire format (tasks/send generation), through v01-client.ts. */
let app: ListeningApp;
let card: AgentCard;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  app = await startListeningApp();
  card = await resolveAgentCard(app.baseUrl);
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await app.close();
});

const clientFor = (actor: Actor) => new SamplesClient(card.url, actor.headers);

type Part = Message['parts'][number];
const textsOf = (parts: Part[] | undefined) => (parts ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : []));
const dataOf = (parts: Part[] | undefined) => (parts ?? []).flatMap((part) => (part.type === 'data' ? [part.data] : []));

function view(task: Task): TaskView {
  return {
    id: task.id,
    contextId: task.sessionId ?? undefined,
    state: task.status.state,
    marketplace: (task.metadata?.marketplace ?? {}) as Record<string, unknown>,
    texts: textsOf(task.status.message?.parts),
    data: dataOf(task.status.message?.parts),
    artifactData: (task.artifacts ?? []).flatMap((artifact) => dataOf(artifact.parts)),
    history: task.history?.map((message) => ({ role: message.role, texts: textsOf(message.parts), data: dataOf(message.parts) })),
  };
}

/** The result of a response, or the step fails with the JSON-RPC error the response carries. */
function resultOf<T>(response: { result?: T | null; error?: { code: number; message: string; data?: unknown } | null }): T {
  if (response.error) throw new Error(`JSON-RPC error ${response.error.code}: ${response.error.message} ${JSON.stringify(response.error.data)}`);
  expect(response.result).toBeTruthy();
  return response.result!;
}

function eventView(response: StreamingResponse): EventView {
  const event = resultOf(response);
  if ('artifact' in event) return { kind: 'artifact', taskId: event.id, artifactData: dataOf(event.artifact.parts) };
  return { kind: 'status', taskId: event.id, state: event.status.state, marketplace: (event.metadata?.marketplace ?? {}) as Record<string, unknown> };
}

/** A send as the CLI makes it: a new uuid4().hex task id unless it continues a task, the session id each time. */
const paramsOf = (message: Outgoing) =>
  taskSendParams({
    id: message.taskId ?? hexId(),
    sessionId: message.contextId ?? hexId(),
    parts: [...(message.text !== undefined ? [{ text: message.text }] : []), ...(message.data ? [{ data: message.data }] : [])],
  });

const adapter: CompatClient = {
  states: { submitted: 'submitted', working: 'working', inputRequired: 'input-required', completed: 'completed', canceled: 'canceled' },
  newContextId: hexId,
  conversationContextId: hexId,
  clientNamesTasks: true,
  userRole: 'user',
  send: async (actor, message) => view(resultOf(await clientFor(actor).sendTask(paramsOf(message)))),
  async *stream(actor, message) {
    for await (const response of clientFor(actor).sendTaskStreaming(paramsOf(message))) yield eventView(response);
  },
  get: async (actor, id, historyLength) => view(resultOf(await clientFor(actor).getTask({ id, historyLength }))),
};

describe('the A2A v0.1 samples’ wire format', () => {
  it('reads the card at /.well-known/agent.json with the samples’ AgentCard model', () => {
    expect(card).toMatchObject({
      url: `${app.baseUrl}/api/v1/rpc`,
      capabilities: { streaming: true },
      authentication: { schemes: expect.arrayContaining(['apiKey']) },
    });
    expect(card.skills.length).toBeGreaterThan(0);
  });

  dataPartFlow(
    () => app,
    () => adapter,
  );
  textFlow(
    () => app,
    () => adapter,
    (number) => `take ${number}`,
  );

  it('buys by data part, reads and cancels it, and answers a second cancel with error -32002', async () => {
    const { buyer, capability } = await agentMarket(app.test);
    const client = clientFor(buyer);
    const sessionId = hexId();
    const bought = view(resultOf(await client.sendTask(paramsOf({ data: { capability_id: capability.id }, contextId: sessionId }))));
    expect(bought).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{32}$/), contextId: sessionId, state: 'submitted', marketplace: { status: 'frozen' } });
    expect(view(resultOf(await client.getTask({ id: bought.id })))).toMatchObject({ id: bought.id, contextId: sessionId, state: 'submitted' });
    expect(view(resultOf(await client.cancelTask({ id: bought.id })))).toMatchObject({
      id: bought.id,
      state: 'canceled',
      marketplace: { status: 'cancelled_by_buyer' },
    });
    expect(await balance(app.test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const again: TaskResponse = await client.cancelTask({ id: bought.id });
    expect(again).toMatchObject({ result: null, error: { code: -32002, message: expect.any(String), data: { code: 4090 } } });
  });

  it('answers tasks/get of an unknown task with error -32001', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    expect(await clientFor(buyer).getTask({ id: hexId(), historyLength: 10 })).toMatchObject({ error: { code: -32001, data: { code: 4040 } } });
  });

  it('answers tasks/resubscribe of an unknown task with one event-stream frame carrying error -32001', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const responses: StreamingResponse[] = [];
    for await (const response of clientFor(buyer).resubscribe({ id: hexId() })) responses.push(response);
    expect(responses).toHaveLength(1);
    expect(responses[0]).toMatchObject({ error: { code: -32001, data: { code: 4040 } } });
  });

  it('reports wrong credentials readably: an HTTP 401 error or the -32110 error response', async () => {
    const { buyer } = await agentMarket(app.test, '0');
    const outcome = await clientFor(wrongCredentials(buyer))
      .getTask({ id: hexId() })
      .then(
        (response) => `error ${response.error?.code}`,
        (error: Error) => (error instanceof A2AClientHTTPError ? `http ${error.statusCode}` : `${error.name}: ${error.message}`),
      );
    expect(['http 401', 'error -32110']).toContain(outcome);
  });
});

describe("push notifications in the v0.1 samples' wire format", () => {
  it("sets and reads the task callback; a push is the whole v0.1 Task under the client's id, with the token header", async () => {
    expect(card.capabilities.pushNotifications).toBe(true);
    const { buyer, seller, capability } = await agentMarket(app.test);
    const client = clientFor(buyer);
    const id = hexId();
    const url = receiver.url('/samples-v01');
    const bought = resultOf(
      await client.sendTask(
        taskSendParams({ id, sessionId: hexId(), parts: [{ data: { capability_id: capability.id } }], pushNotification: { url, token: 'samples-token' } }),
      ),
    );
    expect(bought.id).toBe(id);
    expect(resultOf(await client.getTaskCallback({ id }))).toEqual({ id, pushNotificationConfig: { url, token: 'samples-token' } });
    await act(app.test, seller, (bought.metadata!.marketplace as { transaction_id: string }).transaction_id, 'accept').expect(200);
    await app.test.runtime.engine.webhooks.runOnce();
    const pushes = receiver.at('/samples-v01').map((request) => pushedTask.parse(JSON.parse(request.body)));
    expect(pushes.map((task) => [task.id, task.status.state])).toEqual([
      [id, 'submitted'],
      [id, 'working'],
    ]);
    expect(receiver.at('/samples-v01').every((request) => request.headers['x-a2a-notification-token'] === 'samples-token')).toBe(true);

    const replaced = resultOf(await client.setTaskCallback({ id, pushNotificationConfig: { url: receiver.url('/samples-v01-b') } }));
    expect(replaced).toEqual({ id, pushNotificationConfig: { url: receiver.url('/samples-v01-b') } });
    expect(await client.setTaskCallback({ id: hexId(), pushNotificationConfig: { url } })).toMatchObject({ result: null, error: { code: -32001 } });
  });
});
