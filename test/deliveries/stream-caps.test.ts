import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { limits } from '../../src/limits.ts';
import { randomUUID } from 'node:crypto';
import { type Actor, createAgent, createApiKey } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket, buy } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';

/**
 * Open streams and sockets cost memory for as long as they stay open, so each credential may hold
 * only so many at once on an instance: the first one over the cap is refused (4290 with
 * Retry-After, or a 429 upgrade refusal) while other credentials still open theirs.
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

/**
 * Opens a REST event stream and keeps it open until `close`; resolves once the status is known.
 * The answer holds on to the Response: fetch cancels the body of a Response that is garbage
 * collected, which closed streams behind the test's back whenever a collection ran mid-test.
 */
async function openStream(actor: Actor, path = '/api/v1/transactions/events') {
  const abort = new AbortController();
  const response = await fetch(`${served.url}${path}`, { headers: actor.headers, signal: abort.signal });
  const body = response.status === 200 ? null : ((await response.json()) as { code: number; data: { retry_after_seconds: number } });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body, response, close: () => abort.abort() };
}

/** Resolves when the server answered the upgrade: 'open', or the refusal's status and Retry-After. */
function openSocket(actor: Actor): Promise<{ socket: WebSocket; status: number; retryAfter?: string }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${served.url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: actor.headers });
    socket.on('open', () => resolve({ socket, status: 101 }));
    socket.on('unexpected-response', (_request, response) => {
      resolve({ socket, status: response.statusCode ?? 0, retryAfter: response.headers['retry-after'] });
      response.resume();
    });
    socket.on('error', () => {});
  });
}

const eventually = async (check: () => Promise<boolean>) => {
  for (let attempt = 0; attempt < 100 && !(await check()); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
};

describe('SSE streams per credential', () => {
  it('refuses the first stream over the cap with 4290 and Retry-After, and lets other credentials open theirs', async () => {
    const [greedy, other] = [await createAgent(test), await createAgent(test)];
    const streams = await Promise.all(Array.from({ length: limits.sseStreamsPerCredentialMax }, () => openStream(greedy)));
    expect(streams.every((stream) => stream.status === 200)).toBe(true);

    const refused = await openStream(greedy);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 4290, data: { retry_after_seconds: limits.connectionCapRetryAfterSeconds } });
    expect(refused.retryAfter).toBe(String(limits.connectionCapRetryAfterSeconds));

    const others = await openStream(other);
    expect(others.status).toBe(200);

    // A closed stream gives its place back.
    streams[0]!.close();
    let again = { status: 0, close: () => {} };
    await eventually(async () => {
      again.close();
      again = await openStream(greedy);
      return again.status === 200;
    });
    expect(again.status).toBe(200);
    for (const stream of [...streams, others, again]) stream.close();
  });

  it('counts task streams and transaction streams against the same cap', async () => {
    const agent = await createAgent(test);
    const half = limits.sseStreamsPerCredentialMax / 2;
    const streams = await Promise.all(
      Array.from({ length: limits.sseStreamsPerCredentialMax }, (_, index) =>
        openStream(agent, index < half ? '/api/v1/tasks/events' : '/api/v1/transactions/events'),
      ),
    );
    expect(streams.every((stream) => stream.status === 200)).toBe(true);
    const refused = await openStream(agent, '/api/v1/tasks/events');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 4290, data: { retry_after_seconds: limits.connectionCapRetryAfterSeconds } });
    for (const stream of streams) stream.close();
  });

  it('counts JSON-RPC streams against the same cap', async () => {
    const { buyer: agent, capability } = await agentMarket(test);
    const transaction = await buy(test, agent, capability.id);
    const streams = await Promise.all(Array.from({ length: limits.sseStreamsPerCredentialMax }, () => openStream(agent)));
    const response = await fetch(`${served.url}/api/v1/rpc`, {
      method: 'POST',
      headers: { ...agent.headers, 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: transaction.id } }),
    });
    // A client that asked for a stream gets the refusal as a stream of one error frame.
    const text = await response.text();
    expect(text).toContain('"code":4290');
    expect(text).toContain('-32129');
    for (const stream of streams) stream.close();
  });
});

describe('per API key', () => {
  it('caps the streams of all the users of one auto-provisioning key together', async () => {
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const users = Array.from({ length: limits.sseStreamsPerApiKeyMax / limits.sseStreamsPerCredentialMax + 1 }, () => {
      const userId = randomUUID();
      return { userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': userId } };
    });
    const streams = [];
    // Each user opens what its own cap allows; together they reach the key's cap.
    for (const user of users.slice(0, -1))
      streams.push(...(await Promise.all(Array.from({ length: limits.sseStreamsPerCredentialMax }, () => openStream(user)))));
    expect(streams.every((stream) => stream.status === 200)).toBe(true);
    const refused = await openStream(users.at(-1)!);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 4290 });
    for (const stream of streams) stream.close();
  });
});

describe('stream opens over JSON-RPC', () => {
  it('takes a token from the stream-opens bucket for JSON-RPC SSE streams and WebSocket subscriptions', async () => {
    const limited = await startTestApp({ RATE_LIMIT_STREAM_OPENS_PER_CREDENTIAL: '2/60' });
    const limitedServer = await listen(limited);
    const limitedSockets = attachRpcWebSocket(limitedServer.server, limited.runtime.engine);
    try {
      const { buyer, capability } = await agentMarket(limited);
      const transaction = await buy(limited, buyer, capability.id);
      const resubscribe = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tasks/resubscribe', params: { id: transaction.id } });
      const socket = new WebSocket(`${limitedServer.url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: buyer.headers });
      const answers: { id?: number; result?: unknown; error?: { data: { code: number } } }[] = [];
      socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.id !== undefined) answers.push(message);
      });
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(resubscribe(1));
      await eventually(async () => answers.length >= 1);
      const abort = new AbortController();
      const sse = await fetch(`${limitedServer.url}/api/v1/rpc`, {
        method: 'POST',
        headers: { ...buyer.headers, 'Content-Type': 'application/json' },
        body: resubscribe(2),
        signal: abort.signal,
      });
      expect(sse.headers.get('content-type')).toContain('text/event-stream');
      socket.send(resubscribe(3));
      await eventually(async () => answers.length >= 2);
      expect(answers[0]).toMatchObject({ id: 1, result: { subscription: expect.any(String) } });
      expect(answers[1]).toMatchObject({ id: 3, error: { data: { code: 4290 } } });
      abort.abort();
      socket.close();
    } finally {
      await limitedSockets.close();
      await limitedServer.close();
      await limited.close();
    }
  });
});

describe('WebSocket connections per credential', () => {
  it('refuses the upgrade over the cap with 429 and Retry-After, and not another credential', async () => {
    const [greedy, other] = [await createAgent(test), await createAgent(test)];
    const connections = await Promise.all(Array.from({ length: limits.webSocketsPerCredentialMax }, () => openSocket(greedy)));
    expect(connections.every((connection) => connection.status === 101)).toBe(true);

    const refused = await openSocket(greedy);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe(String(limits.connectionCapRetryAfterSeconds));
    const others = await openSocket(other);
    expect(others.status).toBe(101);

    connections[0]!.socket.close();
    let again = await openSocket(greedy);
    await eventually(async () => {
      if (again.status === 101) return true;
      again = await openSocket(greedy);
      return again.status === 101;
    });
    expect(again.status).toBe(101);
    for (const connection of [...connections, others, again]) connection.socket.close();
  });

  it('counts every JSON-RPC message against the credential, a batch as its length', async () => {
    const limited = await startTestApp({ RATE_LIMIT_RPC_CALLS_PER_CREDENTIAL: '3/60' });
    const limitedServer = await listen(limited);
    const limitedSockets = attachRpcWebSocket(limitedServer.server, limited.runtime.engine);
    try {
      const agent = await createAgent(limited);
      const socket = new WebSocket(`${limitedServer.url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: agent.headers });
      const answers: { id?: number | null; error?: { code: number; data: { code: number } } }[] = [];
      socket.on('message', (data) => answers.push(JSON.parse(String(data))));
      await new Promise((resolve) => socket.once('open', resolve));
      const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: '00000000-0000-4000-8000-000000000000' } });
      socket.send(JSON.stringify([call(1), call(2)]));
      await eventually(async () => answers.length >= 1);
      socket.send(JSON.stringify([call(3), call(4)]));
      await eventually(async () => answers.length >= 2);
      expect(answers[1]).toMatchObject({ id: null, error: { code: -32129, data: { code: 4290 } } });
      socket.close();
    } finally {
      await limitedSockets.close();
      await limitedServer.close();
      await limited.close();
    }
  });
});
