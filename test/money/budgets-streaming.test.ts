import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type OwnedAgent, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { rpcCaller } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createCapability, credit } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';

/**
 * A streaming send (tasks/sendSubscribe, message/stream, SendStreamingMessage) answers what is left
 * of the calling key's agent budget in its first event's metadata.marketplace.agent_budget, as the
 * plain send's answer does (docs/decisions/money-and-escrow.md "Agent budgets"), over HTTP (SSE)
 * and WebSocket.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
let sockets: { close(): Promise<void> };
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  const server = await listen(test);
  baseUrl = server.url;
  closeServer = server.close;
  sockets = attachRpcWebSocket(server.server, test.runtime.engine);
  rpc = rpcCaller(test);
});
afterAll(async () => {
  await sockets.close();
  await closeServer();
  await test.close();
});

type Json = Record<string, any>;

/** A person's own key with a daily budget of 10.00 and 100.00 UT, and a seller's capability at 3.00. */
async function market(budget: Json | null = { daily_max: '10.00' }) {
  const buyer = await ownedAgent(test);
  await credit(test, buyer.userId, '100.00');
  if (budget) await setBudget(test, buyer.person, buyer.apiKeyId, budget).expect(200);
  const capability = await createCapability(test, await createAgent(test), { price_ut: '3.00' });
  return { buyer, capability };
}

/** The first result of a streaming method over SSE; the stream is then left (a purchase's stays open). */
async function firstStreamed(actor: Actor, method: string, params: unknown): Promise<Json> {
  const aborted = new AbortController();
  const response = await fetch(`${baseUrl}/api/v1/rpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...actor.headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
    signal: aborted.signal,
  });
  expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) text += decoder.decode(value, { stream: true });
    const block = text.split('\n\n').find((part) => part.split('\n').some((line) => line.startsWith('data: ')));
    if (block && text.includes('\n\n')) {
      aborted.abort();
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('');
      return (JSON.parse(data) as Json).result as Json;
    }
    if (done) throw new Error(`the stream ended without an event: ${text}`);
  }
}

const v10Buy = (capabilityId: string) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capabilityId } }] } });
const v03Buy = (capabilityId: string) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capabilityId } }] },
});
const v01Buy = (capabilityId: string) => ({
  id: `order-${randomUUID()}`,
  message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capabilityId } }] },
});

const budgetLeft = (leftToday: string) => ({ currency: 'UT', daily_max: '10.00', spent_today: (10 - Number(leftToday)).toFixed(2), left_today: leftToday });

describe('over HTTP (SSE)', () => {
  it('the first event of each generation carries what is left after its purchase, as the plain send does', async () => {
    const { buyer, capability } = await market();
    const plain = (await rpc.ok(buyer, 'SendMessage', v10Buy(capability.id))).task;
    expect(plain.metadata.marketplace.agent_budget).toMatchObject(budgetLeft('7.00'));

    const v10 = await firstStreamed(buyer, 'SendStreamingMessage', v10Buy(capability.id));
    expect(v10.task.metadata.marketplace).toMatchObject({ status: 'frozen', agent_budget: budgetLeft('4.00') });
    // The same view the plain send answers with, in the same place.
    expect(Object.keys(v10.task.metadata.marketplace.agent_budget).sort()).toEqual(Object.keys(plain.metadata.marketplace.agent_budget).sort());
    const v03 = await firstStreamed(buyer, 'message/stream', v03Buy(capability.id));
    expect(v03).toMatchObject({ kind: 'task', metadata: { marketplace: { status: 'frozen', agent_budget: budgetLeft('1.00') } } });
  });

  it('tasks/sendSubscribe (v0.1) carries it too, and a stream of one event (a conversation before its pick) as well', async () => {
    const { buyer, capability } = await market();
    const v01 = await firstStreamed(buyer, 'tasks/sendSubscribe', v01Buy(capability.id));
    expect(v01.metadata.marketplace).toMatchObject({ status: 'frozen', agent_budget: budgetLeft('7.00') });
    const talk = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'I need a summary of a long report' }] } };
    const conversation = await firstStreamed(buyer, 'SendStreamingMessage', talk);
    expect(conversation.task.metadata.marketplace.agent_budget).toMatchObject(budgetLeft('7.00'));
  });

  it("a key without a budget, and the operator's key, stream no agent_budget, as their plain sends answer none", async () => {
    const { buyer, capability } = await market(null);
    const operatorKey = await createAgent(test);
    await credit(test, operatorKey.userId, '10.00');
    for (const caller of [buyer, operatorKey] as Actor[]) {
      const first = await firstStreamed(caller, 'SendStreamingMessage', v10Buy(capability.id));
      expect(first.task.metadata.marketplace.status).toBe('frozen');
      expect(first.task.metadata.marketplace).not.toHaveProperty('agent_budget');
    }
  });
});

describe('over WebSocket', () => {
  async function connect(actor: OwnedAgent) {
    const socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: actor.headers });
    const received: Json[] = [];
    socket.on('message', (data) => received.push(JSON.parse(String(data)) as Json));
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const waitFor = async (match: (message: Json) => boolean) => {
      for (let tries = 0; tries < 500; tries++) {
        const found = received.find(match);
        if (found) return found;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      throw new Error(`no such message in ${JSON.stringify(received)}`);
    };
    return { socket, waitFor };
  }

  it('the first tasks/update of each streaming send carries what is left after it', async () => {
    const { buyer, capability } = await market();
    const peer = await connect(buyer);
    peer.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: v10Buy(capability.id) }));
    const answer = await peer.waitFor((message) => message.id === 1);
    const subscription = answer.result.subscription as string;
    const first = await peer.waitFor((message) => message.method === 'tasks/update' && message.params.subscription === subscription);
    expect(first.params.result.task.metadata.marketplace).toMatchObject({ status: 'frozen', agent_budget: budgetLeft('7.00') });
    peer.socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'message/stream', params: v03Buy(capability.id) }));
    const second = await peer.waitFor((message) => message.id === 2);
    const v03 = await peer.waitFor((message) => message.method === 'tasks/update' && message.params.subscription === second.result.subscription);
    expect(v03.params.result.metadata.marketplace.agent_budget).toMatchObject(budgetLeft('4.00'));
    peer.socket.close();
  });
});
