import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance, buy } from '../helpers/market.ts';

/**
 * Any JSON a client can send gets a clean answer: strings PostgreSQL cannot store (a lone UTF-16
 * surrogate, NUL) and keys that would be silently dropped (`__proto__`) are refused with 4000 and
 * the path, over REST, JSON-RPC over HTTP and JSON-RPC over WebSocket, before anything is stored.
 * Bodies are written as raw JSON text, because that is what a client sends on the wire.
 */
let test: TestApp;
const logLines: string[] = [];
let server: Server;
let sockets: { close(): Promise<void> };
let webSocketUrl: string;
beforeAll(async () => {
  test = await startTestApp({}, { logLines });
  server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sockets = attachRpcWebSocket(server, test.runtime.engine);
  webSocketUrl = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/rpc/ws`;
});
afterAll(async () => {
  await sockets.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await test.close();
});

const loneSurrogate = '"\\ud800"';

function postRaw(path: string, headers: Record<string, string>, text: string) {
  return test.http.post(path).set(headers).set('Content-Type', 'application/json').set('Idempotency-Key', randomUUID()).send(text);
}

describe('a lone UTF-16 surrogate', () => {
  it('is refused with 4000 and its path in input, note and a key, and no money moves', async () => {
    const { buyer, capability } = await agentMarket(test);
    const before = await balance(test, buyer);
    const cases: [string, string][] = [
      [`{"capability_id":"${capability.id}","input":{"text":${loneSurrogate}}}`, 'body.input.text'],
      [`{"capability_id":"${capability.id}","input":{"list":["ok",${loneSurrogate}]}}`, 'body.input.list.1'],
      [`{"capability_id":"${capability.id}","note":"a${loneSurrogate.slice(1, -1)}b"}`, 'body.note'],
      [`{"capability_id":"${capability.id}","input":{${loneSurrogate}:1}}`, 'body.input'],
    ];
    for (const [text, path] of cases) {
      const response = await postRaw('/api/v1/transactions', buyer.headers, text);
      expect(response.status, text).toBe(400);
      expect(response.body, text).toMatchObject({ code: 4000, data: { errors: [{ path }] } });
    }
    expect(await balance(test, buyer)).toEqual(before);
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total).toBe(0);
  });

  it('is refused with 4000 in tags and in result_payload', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const tags = await postRaw(
      '/api/v1/capabilities',
      seller.headers,
      `{"title":"t","description":"d","category":"data","capability_type":"tool","pricing_model":"per_use","callback_url":"https://seller.example/callback","tags":["fine",${loneSurrogate}]}`,
    );
    expect(tags.status).toBe(400);
    expect(tags.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.tags.1' }] } });
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    const delivered = await postRaw(`/api/v1/transactions/${id}/deliver`, seller.headers, `{"result_payload":{"summary":${loneSurrogate}}}`);
    expect(delivered.status).toBe(400);
    expect(delivered.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.result_payload.summary' }] } });
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(seller.headers).expect(200)).body.data.status).toBe('accepted');
  });

  it('never reaches the database, so the log carries no SQL', async () => {
    const { buyer, capability } = await agentMarket(test);
    logLines.length = 0;
    await postRaw('/api/v1/transactions', buyer.headers, `{"capability_id":"${capability.id}","input":{"text":${loneSurrogate}}}`).expect(400);
    // "code":5000 as a field: a bare 5000 also turns up inside a random request id.
    expect(logLines.join('\n')).not.toMatch(/insert into|select |"code":5000\b|"status":5\d\d\b|unexpected error/i);
  });

  it('is refused with 4000 over JSON-RPC on HTTP', async () => {
    const { buyer, capability } = await agentMarket(test);
    const text = `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"${randomUUID()}","role":"user","parts":[{"kind":"data","data":{"capability_id":"${capability.id}","input":{"text":${loneSurrogate}}}}]}}}`;
    const response = await test.http.post('/api/v1/rpc').set(buyer.headers).set('Content-Type', 'application/json').send(text).expect(200);
    expect(response.body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total).toBe(0);
  });

  it('is refused with 4000 over JSON-RPC on a WebSocket, key or value', async () => {
    const { buyer } = await agentMarket(test);
    const socket = new WebSocket(webSocketUrl, { headers: buyer.headers });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    const answers: Record<string, unknown>[] = [];
    socket.on('message', (data) => answers.push(JSON.parse(String(data))));
    socket.send(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":${loneSurrogate}}}`);
    socket.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"x","__proto__":{"polluted":true}}}`);
    for (let attempt = 0; attempt < 200 && answers.length < 2; attempt++) await new Promise((resolve) => setTimeout(resolve, 10));
    socket.close();
    expect(answers).toHaveLength(2);
    for (const answer of answers) expect(answer.error).toMatchObject({ code: -32602, data: { code: 4000 } });
  });
});

describe('keys that would change an object prototype', () => {
  it.each(['__proto__', 'constructor'])('refuses %s inside input with 4000 and its path', async (key) => {
    const { buyer, capability } = await agentMarket(test);
    const response = await postRaw('/api/v1/transactions', buyer.headers, `{"capability_id":"${capability.id}","input":{"nested":{"${key}":{"admin":true}}}}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 4000, data: { errors: [{ path: `body.input.nested.${key}` }] } });
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total).toBe(0);
  });

  it('keeps an ordinary key that merely contains the word', async () => {
    const { buyer, capability } = await agentMarket(test);
    const response = await postRaw('/api/v1/transactions', buyer.headers, `{"capability_id":"${capability.id}","input":{"my_constructor":1,"proto":2}}`);
    expect(response.status).toBe(201);
    expect(response.body.data.input).toEqual({ my_constructor: 1, proto: 2 });
  });

  it('refuses __proto__ over JSON-RPC on HTTP', async () => {
    const { buyer } = await agentMarket(test);
    const response = await test.http
      .post('/api/v1/rpc')
      .set(buyer.headers)
      .set('Content-Type', 'application/json')
      .send('{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x","metadata":{"__proto__":{"a":1}}}}')
      .expect(200);
    expect(response.body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
  });
});
