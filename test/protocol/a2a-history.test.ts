import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hex, rpcCaller, v10Text } from '../helpers/a2a.ts';
import { pruneOld, startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, createCapability } from '../helpers/market.ts';
import { rpcStreamResults } from '../helpers/rpc-stream.ts';
import { listen } from '../helpers/server.ts';

/**
 * Every task keeps its messages (docs/decisions/a2a.md "History"): the
 * buyer's as sent and the agent's status messages, in order, answered as `history` by GetTask /
 * tasks/get in each generation's shapes, by ListTasks and by the first event of a stream,
 * honouring historyLength (0: none; absent: all up to limits.a2aHistoryLengthMax).
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
let endpoint: string;
let closeServer: () => Promise<void>;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
  const server = await listen(test);
  endpoint = `${server.url}/api/v1/rpc`;
  closeServer = server.close;
});
afterAll(async () => {
  await closeServer();
  await test.close();
});

type Json = Record<string, any>;
const textsOf = (history: Json[]) =>
  history.map((message) => `${message.role}: ${message.parts.map((part: Json) => part.text ?? JSON.stringify(part.data)).join(' | ')}`);

/** A purchase task walked to settlement: bought with a note, accepted and delivered over REST, confirmed in words. */
async function settledPurchase(contextId: string) {
  const { buyer, seller, capability } = await agentMarket(test);
  const messageId = randomUUID();
  const sent = (
    await rpc.ok(buyer, 'SendMessage', {
      message: { messageId, contextId, role: 'ROLE_USER', parts: [{ text: 'by Friday please' }, { data: { capability_id: capability.id } }] },
    })
  ).task;
  await act(test, seller, sent.id, 'accept').expect(200);
  await act(test, seller, sent.id, 'deliver', { result_payload: { done: true } }).expect(200);
  const confirmId = randomUUID();
  await rpc.ok(buyer, 'SendMessage', { message: { messageId: confirmId, role: 'ROLE_USER', taskId: sent.id, parts: [{ text: 'confirm' }] } });
  return { buyer, seller, taskId: sent.id as string, messageId, confirmId };
}

describe('history of a purchase task', () => {
  it("keeps the buyer's messages and every state, in order, in the v1.0 shapes, honouring historyLength", async () => {
    const contextId = `history-${hex()}`;
    const { buyer, taskId, messageId, confirmId } = await settledPurchase(contextId);
    const task = await rpc.ok(buyer, 'GetTask', { id: taskId });
    expect(task.history.map((message: Json) => message.messageId)).toEqual([
      messageId,
      `${taskId}:frozen`,
      `${taskId}:accepted`,
      `${taskId}:delivered`,
      confirmId,
      `${taskId}:settled`,
    ]);
    expect(task.history[0]).toEqual({
      messageId,
      role: 'ROLE_USER',
      parts: [{ text: 'by Friday please' }, { data: { capability_id: task.metadata.marketplace.capability_id }, mediaType: 'application/json' }],
      taskId,
      contextId,
    });
    expect(task.history[1]).toMatchObject({ role: 'ROLE_AGENT', taskId, contextId, parts: [{ text: expect.stringContaining('held in escrow') }] });
    expect(task.history.at(-1)).toEqual(task.status.message);

    expect((await rpc.ok(buyer, 'GetTask', { id: taskId, historyLength: 0 })).history).toEqual([]);
    const newest = (await rpc.ok(buyer, 'GetTask', { id: taskId, historyLength: 2 })).history;
    expect(newest.map((message: Json) => message.messageId)).toEqual([confirmId, `${taskId}:settled`]);
    expect((await rpc.ok(buyer, 'GetTask', { id: taskId, historyLength: 1000 })).history).toHaveLength(6);
    expect((await rpc.call(buyer, 'GetTask', { id: taskId, historyLength: -1 })).error).toMatchObject({ code: -32602 });
  });

  it('answers the same history in the v0.3, v0.1 and header-less shapes', async () => {
    const { buyer, taskId, messageId } = await settledPurchase('same-history');
    const v03 = (await rpc.ok(buyer, 'tasks/get', { id: taskId }, { 'A2A-Version': '0.3' })).history;
    expect(v03[0]).toEqual({
      kind: 'message',
      messageId,
      role: 'user',
      parts: [
        { kind: 'text', text: 'by Friday please' },
        { kind: 'data', data: expect.any(Object) },
      ],
      taskId,
      contextId: 'same-history',
    });
    expect(v03.map((message: Json) => message.role)).toEqual(['user', 'agent', 'agent', 'agent', 'user', 'agent']);
    const v01 = (await rpc.ok(buyer, 'tasks/get', { id: taskId, historyLength: 3 }, { 'A2A-Version': '0.1' })).history;
    expect(v01).toEqual([
      { role: 'agent', parts: [{ type: 'text', text: expect.stringContaining('Delivered') }] },
      { role: 'user', parts: [{ type: 'text', text: 'confirm' }] },
      { role: 'agent', parts: [{ type: 'text', text: expect.stringContaining('Settled') }] },
    ]);
    const hybrid = (await rpc.ok(buyer, 'tasks/get', { id: taskId })).history;
    expect(textsOf(hybrid)).toEqual(textsOf(v03));
  });

  it("shows the seller the states but not the buyer's messages, and answers history in ListTasks", async () => {
    const { buyer, seller, taskId } = await settledPurchase('seller-view');
    const sellers = (await rpc.ok(seller, 'GetTask', { id: taskId })).history;
    expect(sellers.map((message: Json) => message.role)).toEqual(['ROLE_AGENT', 'ROLE_AGENT', 'ROLE_AGENT', 'ROLE_AGENT']);
    const listed = await rpc.ok(buyer, 'ListTasks', { historyLength: 2 });
    expect(listed.tasks).toHaveLength(1);
    expect(listed.tasks[0].history.map((message: Json) => message.role)).toEqual(['ROLE_USER', 'ROLE_AGENT']);
    expect((await rpc.ok(buyer, 'ListTasks', { historyLength: 0 })).tasks[0].history).toEqual([]);
    expect((await rpc.ok(buyer, 'ListTasks', {})).tasks[0].history).toHaveLength(6);
  });
});

describe('history of a conversation task', () => {
  it('keeps each exchange and the purchase that followed, across reads and the first stream event', async () => {
    const topic = `topic${randomBytes(3).toString('hex')}`;
    const { buyer, seller } = await agentMarket(test);
    const capability = await createCapability(test, seller, { title: `Proofread ${topic} essays` });
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`a poem about ${hex()}`))).task;
    await rpc.ok(buyer, 'SendMessage', v10Text(`proofread my ${topic} essays`, { taskId: started.id }));
    const picked = (await rpc.ok(buyer, 'SendMessage', v10Text(`buy ${capability.id}`, { taskId: started.id }))).task;
    const transactionId = picked.metadata.marketplace.transaction_id;
    expect(textsOf(picked.history).map((line) => line.split(':')[0])).toEqual([
      'ROLE_USER',
      'ROLE_AGENT',
      'ROLE_USER',
      'ROLE_AGENT',
      'ROLE_USER',
      'ROLE_AGENT',
    ]);
    expect(picked.history[4].parts).toEqual([{ text: `buy ${capability.id}` }]);
    expect(picked.history[5].messageId).toBe(`${transactionId}:frozen`);

    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { proofread: true } }).expect(200);
    const [first, ...more] = await rpcStreamResults(endpoint, buyer, 'SubscribeToTask', { id: started.id });
    expect(more).toEqual([]);
    expect(first!.task.history).toHaveLength(8);
    expect(first!.task.history.slice(-3).map((message: Json) => message.messageId)).toEqual([
      `${transactionId}:frozen`,
      `${transactionId}:accepted`,
      `${transactionId}:delivered`,
    ]);
    const [shortened] = await rpcStreamResults(endpoint, buyer, 'SubscribeToTask', { id: transactionId, historyLength: 1 });
    expect(shortened!.task).toMatchObject({ id: transactionId, history: [{ messageId: `${transactionId}:delivered` }] });
  });
});

describe('history and retention', () => {
  // Last in this file: it moves the shared app's clock past the outbox's retention.
  it("keeps the states after the retention job deleted the task's events; the buyer's words follow the events' retention", async () => {
    const { buyer, taskId } = await settledPurchase('kept-for-good');
    const before = (await rpc.ok(buyer, 'GetTask', { id: taskId })).history as Record<string, any>[];
    expect(before).toHaveLength(6);
    test.clock.advanceMs((test.config.OUTBOX_RETENTION_HOURS + 1) * 60 * 60 * 1000);
    const deleted = await pruneOld(test);
    expect(deleted.outboxEvents).toBeGreaterThan(0);
    expect(deleted.a2aMessages).toBeGreaterThan(0);
    const after = (await rpc.ok(buyer, 'GetTask', { id: taskId })).history;
    expect(after).toEqual(before.filter((message) => !message.role.endsWith('USER') && message.role !== 'user'));
    expect(after.length).toBeGreaterThanOrEqual(4);
  });
});
