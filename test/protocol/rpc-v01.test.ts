import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance, credit } from '../helpers/market.ts';

/** A v0.1-era A2A client: plain fetch, client-chosen task ids, `type` parts, no version header. */
let test: TestApp;
let server: Server;
let endpoint: string;
beforeAll(async () => {
  test = await startTestApp();
  server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/rpc`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await test.close();
});

type Json = Record<string, any>;

async function rpc(actor: Actor, method: string, params: unknown, headers: Record<string, string> = {}): Promise<Json> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...actor.headers, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

interface SseEvent {
  id?: string;
  data: Json;
}

/** Reads an SSE response event by event; ends when the server ends the stream. */
async function* stream(actor: Actor, method: string, params: unknown, headers: Record<string, string> = {}): AsyncGenerator<SseEvent> {
  const requestId = randomUUID();
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...actor.headers, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: requestId, method, params }),
  });
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  expect(response.headers.get('cache-control')).toBe('no-cache, no-transform');
  expect(response.headers.get('x-accel-buffering')).toBe('no');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body!) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | undefined;
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = line.slice(4);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (!data) continue;
      const parsed = JSON.parse(data) as Json;
      expect(parsed).toMatchObject({ jsonrpc: '2.0', id: requestId });
      yield { id, data: parsed.result ?? parsed };
    }
  }
}

async function rest<T>(events: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of events) out.push(event);
  return out;
}

const buyMessage = (capabilityId: string, text = 'Summarize the attached report, please.') => ({
  role: 'user',
  parts: [
    { type: 'text', text },
    { type: 'data', data: { capability_id: capabilityId, input: { url: 'https://example.com/r.pdf' } } },
  ],
});
const confirmMessage = { role: 'user', parts: [{ type: 'data', data: { action: 'confirm' } }] };

describe('A2A v0.1 over plain fetch', () => {
  it('buys with tasks/send, reads by either id, and confirms with a follow-up tasks/send', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00', { price_ut: '25.00' });
    const taskId = `order-${randomUUID()}`;
    const sessionId = randomUUID();
    const sent = await rpc(buyer, 'tasks/send', { id: taskId, sessionId, message: buyMessage(capability.id) });
    expect(sent.result).toMatchObject({
      id: taskId,
      sessionId,
      status: { state: 'submitted', message: { role: 'agent', parts: [{ type: 'text' }] } },
      metadata: { marketplace: { status: 'frozen', price: '25.00', currency: 'UT', client_task_id: taskId, context_id: sessionId } },
    });
    expect(sent.result.kind).toBeUndefined();
    const transactionId: string = sent.result.metadata.marketplace.transaction_id;
    expect(await balance(test, buyer)).toMatchObject({ available: '75.00', frozen: '25.00' });

    const byClientId = await rpc(buyer, 'tasks/get', { id: taskId });
    expect(byClientId.result).toMatchObject({ id: taskId, sessionId, contextId: sessionId, status: { state: 'submitted' } });
    const byTransactionId = await rpc(buyer, 'tasks/get', { id: transactionId }, { 'A2A-Version': '0.1' });
    expect(byTransactionId.result).toMatchObject({ id: transactionId, sessionId, status: { state: 'submitted' } });
    expect(byTransactionId.result.kind).toBeUndefined();

    await act(test, seller, transactionId, 'accept').expect(200);
    expect((await rpc(buyer, 'tasks/get', { id: taskId })).result.status.state).toBe('working');
    await act(test, seller, transactionId, 'deliver', { result_payload: { summary: 'It is about escrow.' } }).expect(200);
    const delivered = await rpc(buyer, 'tasks/get', { id: taskId }, { 'A2A-Version': '0.1' });
    expect(delivered.result).toMatchObject({
      status: { state: 'input-required' },
      artifacts: [{ name: 'result', index: 0, parts: [{ type: 'data', data: { summary: 'It is about escrow.' } }] }],
    });

    const confirmed = await rpc(buyer, 'tasks/send', { id: taskId, message: confirmMessage });
    expect(confirmed.result).toMatchObject({ id: taskId, status: { state: 'completed' }, metadata: { marketplace: { status: 'settled' } } });
    expect(await balance(test, seller)).toMatchObject({ available: '25.00' });

    // Resending either message is safe: the task id is the idempotency key.
    expect((await rpc(buyer, 'tasks/send', { id: taskId, message: confirmMessage })).result.status.state).toBe('completed');
    const resent = await rpc(buyer, 'tasks/send', { id: taskId, sessionId, message: buyMessage(capability.id) });
    expect(resent.result).toMatchObject({ id: taskId, status: { state: 'completed' } });
    expect(await balance(test, buyer)).toMatchObject({ available: '75.00', frozen: '0.00' });
    const changed = await rpc(buyer, 'tasks/send', { id: taskId, sessionId, message: buyMessage(capability.id, 'something else') });
    expect(changed.error).toMatchObject({ code: -32122, data: { code: 4220 } });
    expect(changed.error.message).toMatch(/^this task id was already used with a different message/);
  });

  it('streams tasks/sendSubscribe while the seller acts over REST, and resumes with Last-Event-ID', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const taskId = `order-${randomUUID()}`;
    const events = stream(buyer, 'tasks/sendSubscribe', { id: taskId, message: buyMessage(capability.id) });
    const first = (await events.next()).value as SseEvent;
    expect(first.data).toMatchObject({ id: taskId, status: { state: 'submitted' }, metadata: { marketplace: { status: 'frozen' } } });
    expect(first.id).toMatch(/^\d+$/);
    const transactionId: string = first.data.metadata.marketplace.transaction_id;

    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { answer: 42 } }).expect(200);
    const later = await rest(events);
    expect(later.map((event) => event.data.status?.state ?? 'artifact')).toEqual(['working', 'artifact', 'input-required']);
    expect(later[0]!.data).toMatchObject({ id: taskId, final: false, metadata: { marketplace: { status: 'accepted' } } });
    expect(later[1]!.data).toMatchObject({ id: taskId, artifact: { parts: [{ type: 'data', data: { answer: 42 } }] } });
    expect(later[1]!.id).toBeUndefined();
    expect(later[2]!.data).toMatchObject({ id: taskId, final: true });
    const sequences = [first.id, later[0]!.id, later[2]!.id].map(Number);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(3);

    // Resuming after the "working" event replays only what came after it.
    const resumed = await rest(stream(buyer, 'tasks/resubscribe', { id: taskId }, { 'Last-Event-ID': later[0]!.id!, 'A2A-Version': '0.1' }));
    expect(resumed[0]!.data).toMatchObject({ id: taskId, status: { state: 'input-required' } });
    expect(resumed.length).toBe(1);

    // The confirmation can stream too: the current task, completed, ends the stream.
    const settled = await rest(stream(buyer, 'tasks/sendSubscribe', { id: taskId, message: confirmMessage }));
    expect(settled).toHaveLength(1);
    expect(settled[0]!.data).toMatchObject({ id: taskId, status: { state: 'completed' }, metadata: { marketplace: { status: 'settled' } } });
  });

  it('cancels a task with tasks/cancel and releases the funds', async () => {
    const { buyer, capability } = await agentMarket(test);
    const taskId = `order-${randomUUID()}`;
    await rpc(buyer, 'tasks/send', { id: taskId, message: buyMessage(capability.id) });
    expect(await balance(test, buyer)).toMatchObject({ frozen: '10.00' });
    const cancelled = await rpc(buyer, 'tasks/cancel', { id: taskId }, { 'A2A-Version': '0.1' });
    expect(cancelled.result).toMatchObject({ id: taskId, status: { state: 'canceled' }, metadata: { marketplace: { status: 'cancelled_by_buyer' } } });
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const again = await rpc(buyer, 'tasks/cancel', { id: taskId });
    expect(again.error).toMatchObject({ code: -32002, data: { code: 4090 } });
  });

  it('reports a failed freeze with the pending transaction, and freezes it when the same send is retried after a top-up', async () => {
    const { buyer, capability } = await agentMarket(test, '5.00');
    const taskId = `order-${randomUUID()}`;
    const params = { id: taskId, message: buyMessage(capability.id) };
    const failed = await rpc(buyer, 'tasks/send', params);
    expect(failed.error).toMatchObject({
      code: -32120,
      data: {
        code: 4020,
        message: 'insufficient_balance',
        data: { currency: 'UT', available: '5.00', required: '10.00' },
        task_id: taskId,
        status: 'pending_freeze',
      },
    });
    const pending = await rpc(buyer, 'tasks/get', { id: taskId });
    expect(pending.result).toMatchObject({
      status: { state: 'submitted' },
      metadata: { marketplace: { status: 'pending_freeze', transaction_id: failed.error.data.transaction_id } },
    });
    await credit(test, buyer.userId, '10.00');
    const retried = await rpc(buyer, 'tasks/send', params);
    expect(retried.result).toMatchObject({ id: taskId, metadata: { marketplace: { status: 'frozen', transaction_id: failed.error.data.transaction_id } } });
    expect(await balance(test, buyer)).toMatchObject({ available: '5.00', frozen: '10.00' });
  });
});

describe('a v0.1 task id after its idempotency key has expired', () => {
  it('still names its task: sending a new purchase under it is 4092, not a second task', async () => {
    const { buyer, capability } = await agentMarket(test);
    const id = `v01-task-${randomUUID()}`;
    const message = { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] };
    const first = await rpc(buyer, 'tasks/send', { id, message });
    expect(first.result.id).toBe(id);
    test.clock.advanceMs(25 * 60 * 60 * 1000); // past the 24 h idempotency retention
    const reused = await rpc(buyer, 'tasks/send', { id, message });
    expect(reused.error.data).toMatchObject({ code: 4092 });
    const read = await rpc(buyer, 'tasks/get', { id });
    expect(read.result.metadata.marketplace.transaction_id).toBe(first.result.metadata.marketplace.transaction_id);
  });
});
