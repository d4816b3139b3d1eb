import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { limits } from '../../src/limits.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket, buy, humanMarket } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';

/**
 * Streams end with their credential and count against one cap (issue 15 point 9): an SSE stream
 * opened with a JWT (REST and JSON-RPC) ends at the token's exp, and WebSocket subscriptions count
 * against the per-credential stream cap, so sockets times subscriptions cannot multiply it.
 */
let test: TestApp;
let served: Awaited<ReturnType<typeof listen>>;
let sockets: { close(): Promise<void> };
beforeAll(async () => {
  test = await startTestApp();
  served = await listen(test);
  sockets = attachRpcWebSocket(served.server, test.runtime.engine);
});
afterAll(async () => {
  await sockets.close();
  await served.close();
  await test.close();
});

type Json = Record<string, any>;

/** A bearer token for the user that expires in `seconds`, and the time it expires. */
async function shortLivedToken(userId: string, seconds: number) {
  const minted = await test.runtime.engine.identity.mintToken(userId, seconds);
  const expiresAtMs = (JSON.parse(Buffer.from(minted.access_token.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
  return { headers: { Authorization: `Bearer ${minted.access_token}` }, expiresAtMs };
}

/** Reads a stream's body to its end; resolves with the time it ended. */
async function endOf(response: Response): Promise<number> {
  const reader = response.body!.getReader();
  while (!(await reader.read()).done);
  return Date.now();
}

describe('a stream opened with a JWT', () => {
  it("ends at the token's exp: the REST event stream and a JSON-RPC stream", async () => {
    const { buyer, capability } = await humanMarket(test);
    const transaction = await buy(test, buyer, capability.id);
    const token = await shortLivedToken(buyer.userId, 2);
    const rest = await fetch(`${served.url}/api/v1/transactions/events`, { headers: token.headers });
    const rpc = await fetch(`${served.url}/api/v1/rpc`, {
      method: 'POST',
      headers: { ...token.headers, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: transaction.id } }),
    });
    expect([rest.status, rpc.status]).toEqual([200, 200]);
    const [restEnded, rpcEnded] = await Promise.all([endOf(rest), endOf(rpc)]);
    // Not before the token expired, and soon after (the streams would otherwise stay open for hours).
    for (const ended of [restEnded, rpcEnded]) {
      expect(ended).toBeGreaterThanOrEqual(token.expiresAtMs - 50);
      expect(ended).toBeLessThan(token.expiresAtMs + 5_000);
    }
  }, 20_000);
});

describe('WebSocket subscriptions', () => {
  function socketOf(headers: Record<string, string>): Promise<{ call(method: string, params: Json): Promise<Json>; close(): void }> {
    const socket = new WebSocket(`${served.url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers });
    const waiting = new Map<number, (message: Json) => void>();
    let next = 0;
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Json;
      if (message.id !== undefined) waiting.get(message.id)?.(message);
    });
    return new Promise((resolve, reject) => {
      socket.on('error', reject);
      socket.on('open', () =>
        resolve({
          call: (method, params) =>
            new Promise((answer) => {
              const id = ++next;
              waiting.set(id, answer);
              socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
            }),
          close: () => socket.close(),
        }),
      );
    });
  }

  it('count against the per-credential stream cap, with SSE streams, and give their place back when unsubscribed', async () => {
    const { buyer, capability } = await agentMarket(test);
    const transaction = await buy(test, buyer, capability.id);
    const first = await socketOf(buyer.headers);
    const second = await socketOf(buyer.headers);
    const subscriptions: string[] = [];
    for (let index = 0; index < limits.sseStreamsPerCredentialMax; index++) {
      const socket = index % 2 === 0 ? first : second;
      const answer = await socket.call('tasks/resubscribe', { id: transaction.id });
      expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
      subscriptions.push(answer.result.subscription);
    }
    const refused = await second.call('tasks/resubscribe', { id: transaction.id });
    expect(refused.error).toMatchObject({ code: -32129, data: { code: 4290 } });
    const sse = await fetch(`${served.url}/api/v1/transactions/events`, { headers: buyer.headers });
    expect(sse.status).toBe(429);
    expect((await first.call('tasks/unsubscribe', { subscription: subscriptions[0] })).result).toEqual({ unsubscribed: true });
    expect((await second.call('tasks/resubscribe', { id: transaction.id })).error).toBeUndefined();
    // Closing a socket gives back all of its subscriptions.
    first.close();
    await expect
      .poll(async () => {
        const stream = await fetch(`${served.url}/api/v1/transactions/events`, { headers: buyer.headers });
        await stream.body?.cancel();
        return stream.status;
      })
      .toBe(200);
    second.close();
  });

  it('of another credential are not counted against this one', async () => {
    const human = await signUpHuman(test);
    const stream = await fetch(`${served.url}/api/v1/transactions/events`, { headers: human.headers });
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
  });
});
