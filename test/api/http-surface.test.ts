import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http, { type IncomingHttpHeaders } from 'node:http';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { listen } from '../helpers/server.ts';
import { agentMarket, buy } from '../helpers/market.ts';

/** What a newcomer meets first: the OpenAPI document, wrong methods, /docs/, request ids, the log. */
let test: TestApp;
const logLines: string[] = [];
beforeAll(async () => {
  test = await startTestApp({}, { logLines });
});
afterAll(() => test.close());

const openApiPath = '/api/v1/public/openapi.json';
const logEntries = () => logLines.map((line) => JSON.parse(line) as Record<string, unknown>);

describe('the OpenAPI document', () => {
  it('is the same document with the same ETag for 100 parallel readers', async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, () => test.http.get(openApiPath).expect(200)));
    const etags = new Set(responses.map((response) => response.headers.etag));
    expect(etags.size).toBe(1);
    expect([...etags][0]).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(new Set(responses.map((response) => response.text)).size).toBe(1);
    expect(responses[0]!.body.openapi).toBe('3.1.0');
  });

  it('answers 304 with no body to If-None-Match with its ETag, and 200 to a stale one', async () => {
    const first = await test.http.get(openApiPath).expect(200);
    const notModified = await test.http.get(openApiPath).set('If-None-Match', String(first.headers.etag)).expect(304);
    expect(notModified.text ?? '').toBe('');
    expect(notModified.headers.etag).toBe(first.headers.etag);
    const stale = await test.http.get(openApiPath).set('If-None-Match', '"something-else"').expect(200);
    expect(stale.body.openapi).toBe('3.1.0');
  });

  it('still sends no ETag on enveloped answers', async () => {
    expect((await test.http.get('/healthz').expect(200)).headers.etag).toBeUndefined();
  });
});

describe('a known path with a method it does not have', () => {
  it.each([
    ['delete', '/api/v1/transactions', 'GET, HEAD, POST'],
    ['put', '/healthz', 'GET, HEAD'],
    ['get', '/api/v1/rpc', 'POST'],
    ['patch', '/api/v1/transactions/9b2f0b7e-3c51-4c9f-9a0b-0a8a1b2c3d4e', 'GET, HEAD'],
    ['options', '/api/v1/transactions', 'GET, HEAD, POST'],
  ] as const)('%s %s answers 405 and 4050 with Allow: %s', async (method, path, allow) => {
    const response = await test.http[method](path).expect(405);
    expect(response.headers.allow).toBe(allow);
    expect(response.body).toMatchObject({ code: 4050, message: 'method_not_allowed' });
    expect(response.body.timestamp).toEqual(expect.any(Number));
  });

  it.each([
    ['get', '/api/v1/capabilities/batch', 'POST'],
    ['delete', '/api/v1/capabilities/match', 'POST'],
    ['options', '/api/v1/capabilities/match', 'POST'],
    ['get', '/api/v1/skills/extract', 'POST'],
    ['put', '/api/v1/tasks/hall', 'GET, HEAD'],
    ['get', '/api/v1/tasks/ai-create', 'POST'],
  ] as const)('%s %s, which a parameter route would also match, answers 405 with Allow: %s', async (method, path, allow) => {
    const { buyer } = await agentMarket(test);
    const response = await test.http[method](path).set(buyer.headers).expect(405);
    expect(response.headers.allow).toBe(allow);
    expect(response.body.code).toBe(4050);
  });

  it('answers 405 with the declared methods for every other method on every fixed path of the OpenAPI document', async () => {
    const document = (await test.http.get(openApiPath).expect(200)).body as { paths: Record<string, Record<string, unknown>> };
    const fixedPaths = Object.keys(document.paths).filter((path) => path.startsWith('/api/v1/') && !path.includes('{'));
    expect(fixedPaths.length).toBeGreaterThan(40);
    const methods = ['get', 'post', 'put', 'delete', 'patch'] as const;
    const wrong: string[] = [];
    for (const path of fixedPaths) {
      const declared = methods.filter((method) => method in document.paths[path]!).map((method) => method.toUpperCase());
      const allow = [...declared, ...(declared.includes('GET') ? ['HEAD'] : [])].sort().join(', ');
      for (const method of methods.filter((method) => !declared.includes(method.toUpperCase()))) {
        const response = await test.http[method](path);
        if (response.status !== 405 || response.headers.allow !== allow) wrong.push(`${method} ${path}: ${response.status} ${response.headers.allow}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('leaves an unknown path, in any method, at 404 and 4040', async () => {
    for (const method of ['get', 'delete', 'options'] as const) {
      const response = await test.http[method]('/api/v1/no-such-thing').expect(404);
      expect(response.body.code).toBe(4040);
      expect(response.headers.allow).toBeUndefined();
    }
  });

  it('does not run the handler: a DELETE on the transactions list changes nothing', async () => {
    const { buyer, capability } = await agentMarket(test);
    await buy(test, buyer, capability.id);
    await test.http.delete('/api/v1/transactions').set(buyer.headers).expect(405);
    expect((await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total).toBe(1);
  });
});

describe('the API reference page', () => {
  it('is served at /docs and at /docs/ alike', async () => {
    const plain = await test.http.get('/docs').expect(200);
    const slash = await test.http.get('/docs/').expect(200);
    expect(slash.headers['content-type']).toMatch(/text\/html/);
    expect(slash.text).toBe(plain.text);
  });
});

describe('request ids and the access log', () => {
  it('gives every response an X-Request-Id, taking a well-formed one from the client', async () => {
    const generated = await test.http.get('/healthz').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    const other = await test.http.get('/healthz').expect(200);
    expect(other.headers['x-request-id']).not.toBe(generated.headers['x-request-id']);
    const given = await test.http.get('/healthz').set('X-Request-Id', 'client.trace-42_A').expect(200);
    expect(given.headers['x-request-id']).toBe('client.trace-42_A');
    const missing = await test.http.get('/api/v1/no-such-thing').expect(404);
    expect(missing.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it('gives streams, the reference page and its assets an X-Request-Id too', async () => {
    const { buyer } = await agentMarket(test);
    const served = await listen(test);
    try {
      const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
        const request = http.get(
          `${served.url}/api/v1/transactions/events`,
          { headers: { ...buyer.headers, Accept: 'text/event-stream', 'X-Request-Id': 'stream-7' } },
          (response) => {
            resolve(response.headers);
            request.destroy();
          },
        );
        request.on('error', reject);
      });
      expect(headers['content-type']).toMatch(/^text\/event-stream/);
      expect(headers['x-request-id']).toBe('stream-7');
    } finally {
      await served.close();
    }
    const page = await test.http.get('/docs/').expect(200);
    expect(page.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]+$/);
    const asset = await test.http.get('/docs/assets/swagger-ui.css').expect(200);
    expect(asset.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]+$/);
  });

  it.each([['has spaces'], ['x'.repeat(129)], ['semi;colon'], ['']])('replaces the malformed client id %j with its own', async (id) => {
    const response = await test.http.get('/healthz').set('X-Request-Id', id).expect(200);
    expect(response.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    expect(response.headers['x-request-id']).not.toBe(id);
  });

  it('writes one info access line per request, without the query string', async () => {
    const { buyer } = await agentMarket(test);
    logLines.length = 0;
    const response = await test.http
      .get('/api/v1/transactions?page_size=5&token=secret-in-query')
      .set(buyer.headers)
      .set('X-Request-Id', 'access-line-1')
      .expect(200);
    const lines = logEntries().filter((entry) => entry.request_id === 'access-line-1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      message: 'request',
      method: 'GET',
      path: '/api/v1/transactions',
      status: 200,
      duration_ms: expect.any(Number),
    });
    expect(JSON.stringify(lines)).not.toContain('secret-in-query');
    expect(response.headers['x-request-id']).toBe('access-line-1');
  });

  it('puts the request id on every line written while serving the request, the 5000 error too', async () => {
    await test.runtime.database.db.raw(`ALTER TABLE users ADD CONSTRAINT test_refuses_fail CHECK (email NOT LIKE 'fail-%')`);
    logLines.length = 0;
    await test.http
      .post('/api/v1/auth/signup')
      .set('X-Request-Id', 'failing-signup')
      .send({ email: 'fail-1@example.com', password: 'secret-pass-4711' })
      .expect(500);
    const lines = logEntries().filter((entry) => entry.request_id === 'failing-signup');
    expect(lines.map((entry) => entry.level).sort()).toEqual(['error', 'info']);
    expect(lines.find((entry) => entry.level === 'info')).toMatchObject({ message: 'request', status: 500 });
    expect(lines.find((entry) => entry.level === 'error')).toMatchObject({ message: 'unexpected error' });
  });

  it('puts the request id on the log lines of a JSON-RPC request too', async () => {
    const { buyer, capability } = await agentMarket(test);
    await test.runtime.database.db.raw(`ALTER TABLE transactions ADD CONSTRAINT test_refuses_rpc_note CHECK (note IS NULL OR note NOT LIKE 'fail-%')`);
    logLines.length = 0;
    const parts = [
      { kind: 'data', data: { capability_id: capability.id } },
      { kind: 'text', text: 'fail-rpc' },
    ];
    const response = await test.http
      .post('/api/v1/rpc')
      .set(buyer.headers)
      .set('X-Request-Id', 'failing-rpc')
      .send({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: 'm-1', role: 'user', parts } } })
      .expect(200);
    expect(response.body.error).toMatchObject({ code: -32603 });
    const lines = logEntries().filter((entry) => entry.request_id === 'failing-rpc');
    expect(lines.map((entry) => entry.level).sort()).toEqual(['error', 'info']);
  });
});
