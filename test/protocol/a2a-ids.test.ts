import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hex, rpcCaller, v03Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';

/**
 * Ids as A2A clients send them (docs/decisions/a2a.md "Context ids and message ids"): any
 * context id up to limits.a2aContextIdLengthMax, echoed as sent and grouped deterministically by
 * the stored uuid it maps to; message ids up to limits.a2aMessageIdLengthMax, a long one hashed
 * into the idempotency key so a resend is still the same purchase.
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
});
afterAll(() => test.close());

const buyV03 = (capabilityId: string, extra: Record<string, unknown> = {}) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capabilityId } }], ...extra },
});
const buyV10 = (capabilityId: string, extra: Record<string, unknown> = {}) => ({
  message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capabilityId } }], ...extra },
});

async function storedContextOf(test: TestApp, headers: Record<string, string>, transactionId: string) {
  return (await test.http.get(`/api/v1/transactions/${transactionId}`).set(headers).expect(200)).body.data.context_id as string;
}

describe('context and session ids', () => {
  it('echoes a free-text contextId in every answer and groups the tasks sent with it', async () => {
    const { buyer, capability } = await agentMarket(test);
    const contextId = `pagination-test-${Date.now()} with spaces & ünïcode`;
    const first = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId }));
    const second = (await rpc.ok(buyer, 'SendMessage', buyV10(capability.id, { contextId }))).task;
    const elsewhere = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId: 'unique-chat-id' }));
    expect(first).toMatchObject({ contextId, status: { message: { contextId } } });
    expect(second.contextId).toBe(contextId);

    // One stored uuid for the one string; another string is another context.
    const stored = await storedContextOf(test, buyer.headers, first.id);
    expect(stored).toMatch(/^[0-9a-f-]{36}$/);
    expect(await storedContextOf(test, buyer.headers, second.id)).toBe(stored);
    expect(await storedContextOf(test, buyer.headers, elsewhere.id)).not.toBe(stored);

    expect(await rpc.ok(buyer, 'tasks/get', { id: first.id })).toMatchObject({ contextId, sessionId: contextId });
    expect(await rpc.ok(buyer, 'GetTask', { id: second.id })).toMatchObject({ contextId });
    const listed = await rpc.ok(buyer, 'ListTasks', { contextId });
    expect(listed.tasks.map((task: { id: string }) => task.id).sort()).toEqual([first.id, second.id].sort());
    expect(listed.tasks.map((task: { contextId: string }) => task.contextId)).toEqual([contextId, contextId]);
  });

  it("takes the v0.1 samples' 32-hex sessionId, and a uuid in any case, echoing each as sent", async () => {
    const { buyer, capability } = await agentMarket(test);
    const sessionId = hex();
    const taskId = hex();
    const v01 = await rpc.ok(buyer, 'tasks/send', {
      id: taskId,
      sessionId,
      message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] },
    });
    expect(v01).toMatchObject({ id: taskId, sessionId });
    // A v0.3 client continuing the same session lands in the same context.
    const v03 = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId: sessionId }));
    const transactionOf = (task: Record<string, any>) => task.metadata.marketplace.transaction_id as string;
    expect(await storedContextOf(test, buyer.headers, transactionOf(v01))).toBe(await storedContextOf(test, buyer.headers, transactionOf(v03)));

    const upper = randomUUID().toUpperCase();
    const shouted = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId: upper }));
    expect(shouted.contextId).toBe(upper);
    expect(await storedContextOf(test, buyer.headers, shouted.id)).toBe(upper.toLowerCase());
  });

  it('treats an empty contextId as none, takes the longest allowed one, and refuses a longer one (-32602)', async () => {
    const { buyer, capability } = await agentMarket(test);
    const unnamed = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId: '' }));
    expect(unnamed.contextId).toBe(await storedContextOf(test, buyer.headers, unnamed.id));
    const longest = 'c'.repeat(256);
    expect((await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId: longest }))).contextId).toBe(longest);
    for (const [method, params] of [
      ['message/send', buyV03(capability.id, { contextId: 'c'.repeat(257) })],
      ['tasks/send', { id: hex(), sessionId: 's'.repeat(257), message: { role: 'user', parts: [{ type: 'text', text: 'hello' }] } }],
      ['ListTasks', { contextId: 'c'.repeat(257) }],
    ] as const) {
      expect((await rpc.call(buyer, method, params)).error, method).toMatchObject({ code: -32602, data: { code: 4000 } });
    }
    expect(await transactionsTotal(buyer.headers)).toBe(2);
  });

  it('puts a conversation in the context of the purchases sent with the same id', async () => {
    const { buyer, capability } = await agentMarket(test);
    const contextId = `conversation-${hex()}`;
    const bought = await rpc.ok(buyer, 'message/send', buyV03(capability.id, { contextId }));
    const started = await rpc.ok(buyer, 'message/send', v03Text('a translation of my letters', { contextId }));
    expect(started).toMatchObject({ contextId, metadata: { marketplace: { conversation_id: started.id, transaction_id: null } } });
    expect(started.metadata.marketplace.context_id).toBe(await storedContextOf(test, buyer.headers, bought.id));
    expect(await rpc.ok(buyer, 'tasks/get', { id: started.id })).toMatchObject({ contextId, sessionId: contextId });
  });
});

async function transactionsTotal(headers: Record<string, string>) {
  return (await test.http.get('/api/v1/transactions').set(headers).expect(200)).body.data.total as number;
}

describe('message ids', () => {
  it('takes a messageId longer than 64 characters (the conformance kit sends 67) and replays it as the same purchase', async () => {
    const { buyer, capability } = await agentMarket(test);
    const messageId = `test-message-${'x'.repeat(54)}`;
    expect(messageId).toHaveLength(67);
    const params = { message: { messageId, role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } };
    const first = (await rpc.ok(buyer, 'SendMessage', params)).task;
    const again = (await rpc.ok(buyer, 'SendMessage', params)).task;
    expect(again.id).toBe(first.id);
    const unicode = { message: { messageId: 'сообщение-1', role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } };
    expect((await rpc.ok(buyer, 'SendMessage', unicode)).task.id).toBe((await rpc.ok(buyer, 'SendMessage', unicode)).task.id);
    expect(await transactionsTotal(buyer.headers)).toBe(2);
  });

  it('refuses a reused long messageId with another message (4220), and one over the limit (-32602)', async () => {
    const { buyer, capability } = await agentMarket(test);
    const messageId = 'm'.repeat(256);
    await rpc.ok(buyer, 'SendMessage', { message: { messageId, role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } });
    const changed = await rpc.call(buyer, 'SendMessage', {
      message: { messageId, role: 'ROLE_USER', parts: [{ text: 'now with a note' }, { data: { capability_id: capability.id } }] },
    });
    // The sentence names what the client sent (messageId), not a header it never sent.
    expect(changed.error).toMatchObject({ code: -32122, data: { code: 4220, message: 'idempotency_key_reused' } });
    expect(changed.error?.message).toMatch(/^this messageId was already sent with a different message/);
    const tooLong = await rpc.call(buyer, 'SendMessage', {
      message: { messageId: 'm'.repeat(257), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
    });
    expect(tooLong.error).toMatchObject({ code: -32602, data: { code: 4000 } });
    expect(await transactionsTotal(buyer.headers)).toBe(1);
  });
});
