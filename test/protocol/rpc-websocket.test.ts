import { randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { type Actor, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket } from '../helpers/market.ts';
import { v10Details } from '../helpers/a2a.ts';
import { ownedAgent } from '../helpers/agent-budgets.ts';

let test: TestApp;
let server: Server;
let sockets: { close(): Promise<void> };
let url: string;
beforeAll(async () => {
  test = await startTestApp();
  server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sockets = attachRpcWebSocket(server, test.runtime.engine);
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/rpc/ws`;
});
afterAll(async () => {
  await sockets.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await test.close();
});

type Json = Record<string, any>;

/** A WebSocket JSON-RPC peer that records every message it receives, in order. */
class Peer {
  readonly received: Json[] = [];
  private waiters: { match: (message: Json) => boolean; resolve: (message: Json) => void }[] = [];
  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as Json;
      this.received.push(message);
      this.waiters = this.waiters.filter((waiter) => !(waiter.match(message) && (waiter.resolve(message), true)));
    });
  }

  static async connect(actor: Actor | null, headers: Record<string, string> = {}): Promise<Peer> {
    const socket = new WebSocket(url, { headers: { ...actor?.headers, ...headers } });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return new Peer(socket);
  }

  waitFor(match: (message: Json) => boolean): Promise<Json> {
    const seen = this.received.find(match);
    return seen ? Promise.resolve(seen) : new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  send(payload: unknown) {
    this.socket.send(typeof payload === 'string' ? payload : JSON.stringify(payload));
  }

  async call(method: string, params: unknown): Promise<Json> {
    const id = randomUUID();
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.waitFor((message) => message.id === id);
  }

  updates(subscription: string) {
    return this.received.filter((message) => message.method === 'tasks/update' && message.params.subscription === subscription);
  }

  update(subscription: string, match: (result: Json) => boolean) {
    return this.waitFor((message) => message.method === 'tasks/update' && message.params.subscription === subscription && match(message.params.result ?? {}));
  }
}

const buyParams = (capabilityId: string) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capabilityId } }] },
});

describe('JSON-RPC over WebSocket', () => {
  it('refuses the upgrade without valid credentials, with the HTTP status and a JSON-RPC error', async () => {
    const refusal = (socket: WebSocket) =>
      new Promise<{ status: number; body: Json }>((resolve) =>
        socket.once('unexpected-response', (_request, response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Json }));
        }),
      );
    const anonymous = await refusal(new WebSocket(url));
    expect(anonymous).toMatchObject({ status: 401, body: { jsonrpc: '2.0', id: null, error: { code: -32110, data: { code: 4010 } } } });
    const { buyer } = await agentMarket(test, '0');
    const mixed = await refusal(new WebSocket(url, { headers: { ...buyer.headers, Authorization: 'Bearer a.b.c' } }));
    expect(mixed).toMatchObject({ status: 400, body: { error: { code: -32111, data: { code: 4011 } } } });
  });

  it('answers calls, batches and parse errors like HTTP', async () => {
    const { buyer, capability } = await agentMarket(test);
    const peer = await Peer.connect(buyer);
    const sent = await peer.call('message/send', buyParams(capability.id));
    expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    expect((await peer.call('tasks/get', { id: randomUUID() })).error).toMatchObject({ code: -32001, data: { code: 4040 } });
    // A v1.0 name answers A2A's errors in v1.0's shape here too (docs/decisions/a2a.md "Errors").
    expect((await peer.call('SubscribeToTask', { id: randomUUID() })).error).toMatchObject({ code: -32001, data: v10Details('TASK_NOT_FOUND', 4040) });
    peer.send('{not json');
    expect(await peer.waitFor((message) => message.error?.code === -32700)).toMatchObject({ id: null });
    peer.send([
      { jsonrpc: '2.0', id: 'a', method: 'GetTask', params: { id: sent.result.id } },
      { jsonrpc: '2.0', id: 'b', method: 'nope' },
    ]);
    const batch = await peer.waitFor((message) => Array.isArray(message));
    expect(batch).toMatchObject([
      { id: 'a', result: { status: { state: 'TASK_STATE_SUBMITTED' } } },
      { id: 'b', error: { code: -32601 } },
    ]);
    peer.socket.close();
  });

  it('refuses every call on a socket opened under an A2A-Version this server does not speak with -32009, buying nothing', async () => {
    const { buyer, capability } = await agentMarket(test);
    const peer = await Peer.connect(buyer, { 'A2A-Version': '2.0' });
    for (const method of ['message/send', 'SendMessage', 'tasks/sendSubscribe']) {
      expect((await peer.call(method, buyParams(capability.id))).error, method).toMatchObject({
        code: -32009,
        data: [{ reason: 'VERSION_NOT_SUPPORTED', metadata: { requested_version: '2.0', supported_versions: '0.1,0.2,0.3,1.0' } }, {}],
      });
    }
    peer.socket.close();
    // The same through the upgrade URL's query parameter, with no header.
    const byQuery = new WebSocket(`${url}?A2A-Version=2.0`, { headers: buyer.headers });
    await new Promise((resolve, reject) => byQuery.once('open', resolve).once('error', reject));
    const queried = new Peer(byQuery);
    expect((await queried.call('SendMessage', buyParams(capability.id))).error).toMatchObject({ code: -32009 });
    byQuery.close();
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.items).toEqual([]);
  });

  it('delivers a subscription as notifications while the seller acts over REST; unsubscribe stops them', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const peer = await Peer.connect(buyer, { 'A2A-Version': '0.3' });
    const bought = await peer.call('message/send', buyParams(capability.id));
    const taskId: string = bought.result.id;

    const watched = await peer.call('tasks/resubscribe', { id: taskId });
    const kept = await peer.call('tasks/resubscribe', { id: taskId });
    const [subscription, other] = [watched.result.subscription as string, kept.result.subscription as string];
    expect(subscription).not.toBe(other);
    const first = await peer.update(subscription, (result) => result.kind === 'task');
    expect(first.params).toMatchObject({ final: false, result: { id: taskId, status: { state: 'submitted' } } });
    expect(first.params.sequence).toMatch(/^\d+$/);
    expect(peer.received.indexOf(first)).toBeGreaterThan(peer.received.indexOf(watched));

    await act(test, seller, taskId, 'accept').expect(200);
    await peer.update(subscription, (result) => result.status?.state === 'working');
    await peer.update(other, (result) => result.status?.state === 'working');

    expect((await peer.call('tasks/unsubscribe', { subscription })).result).toEqual({ unsubscribed: true });
    expect((await peer.call('tasks/unsubscribe', { subscription })).result).toEqual({ unsubscribed: false });
    const countAfterUnsubscribe = peer.updates(subscription).length;

    await act(test, seller, taskId, 'deliver', { result_payload: { done: true } }).expect(200);
    const artifact = await peer.update(other, (result) => result.kind === 'artifact-update');
    expect(artifact.params.result.artifact.parts[0]).toEqual({ kind: 'data', data: { done: true } });
    const last = await peer.update(other, (result) => result.status?.state === 'input-required');
    expect(last.params).toMatchObject({ final: true, result: { kind: 'status-update', final: true } });
    await peer.call('ListTasks', {});
    expect(peer.updates(subscription)).toHaveLength(countAfterUnsubscribe);
    peer.socket.close();
  });

  it('accepts streaming methods in a batch: the answer names the subscription, the task follows', async () => {
    const { buyer, capability } = await agentMarket(test);
    const peer = await Peer.connect(buyer);
    peer.send([
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } },
      },
      { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: {} },
    ]);
    const batch = await peer.waitFor((message) => Array.isArray(message));
    expect(batch[0].result.subscription).toEqual(expect.any(String));
    expect(batch[1].result.totalSize).toBe(1);
    const first = await peer.update(batch[0].result.subscription, (result) => 'task' in result);
    expect(first.params.result.task.status.state).toBe('TASK_STATE_SUBMITTED');
    peer.socket.close();
  });

  it('closes every socket on shutdown, ending open subscriptions', async () => {
    const { buyer, capability } = await agentMarket(test);
    const peer = await Peer.connect(buyer);
    const bought = await peer.call('message/send', buyParams(capability.id));
    await peer.call('tasks/resubscribe', { id: bought.result.id });
    const closed = new Promise<number>((resolve) => peer.socket.once('close', (code) => resolve(code)));
    const local = attachRpcWebSocket(server, test.runtime.engine);
    await local.close();
    // Closing a second, unused transport touches nobody else's sockets.
    expect(peer.socket.readyState).toBe(WebSocket.OPEN);
    await sockets.close();
    expect(await closed).toBe(1001);
    sockets = attachRpcWebSocket(server, test.runtime.engine);
  });
});

describe('credentials on an open socket', () => {
  it('are checked again: once the token has expired, the next call is refused and the socket closed', async () => {
    const human = await signUpHuman(test);
    // Long enough for the first call to pass on a loaded machine; the wait below follows exp itself.
    const shortLived = await test.runtime.engine.identity.mintToken(human.userId, 3);
    const expiresAtMs = (JSON.parse(Buffer.from(shortLived.access_token.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
    const peer = await Peer.connect(null, { Authorization: `Bearer ${shortLived.access_token}` });
    expect((await peer.call('ListTasks', {})).result).toMatchObject({ totalSize: 0 });
    const closed = new Promise<number>((resolve) => peer.socket.once('close', (code) => resolve(code)));
    // JWT expiry has one-second resolution: wait until the token is certainly past its exp.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAtMs - Date.now()) + 1_100));
    const refused = await peer.call('ListTasks', {});
    expect(refused.error).toMatchObject({ code: -32110, data: { code: 4010 } });
    expect(await closed).toBe(1008);
  });

  it('are ended by a revocation of the API key with the same error and close, not a dropped connection a client would redial', async () => {
    const agent = await ownedAgent(test);
    const peer = await Peer.connect(agent);
    expect((await peer.call('ListTasks', {})).result).toMatchObject({ totalSize: 0 });
    const closed = new Promise<number>((resolve) => peer.socket.once('close', (code) => resolve(code)));
    await test.http.delete(`/api/v1/auth/api-keys/${agent.apiKeyId}`).set(agent.person.headers).expect(200);
    expect(await closed).toBe(1008);
    expect(peer.received.at(-1)).toMatchObject({ id: null, error: { code: -32110, data: { code: 4010 } } });
  });
});
