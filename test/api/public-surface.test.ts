import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { documentAjv, nonConformance, schemaRef } from '../helpers/conformance.ts';

interface Operation {
  operationId: string;
  security?: unknown[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, unknown> }>;
}

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

describe('GET /api/v1/categories', () => {
  it('lists the 22 categories of the spec without authentication', async () => {
    const response = await test.http.get('/api/v1/categories').expect(200);
    const codes = response.body.data.map((category: { code: string }) => category.code);
    expect(codes).toEqual([
      'tech_dev',
      'design',
      'copywriting',
      'translation',
      'data',
      'consulting',
      'marketing',
      'video',
      'audio',
      'education',
      'life_service',
      'business',
      'legal_finance',
      'photography',
      'ecommerce',
      'ai_automation',
      'academic',
      'illustration',
      'repair',
      'health',
      'hr_admin',
      'other',
    ]);
    for (const category of response.body.data) {
      expect(category.label).toMatch(/[\u4e00-\u9fff]/);
      expect(category.label_en).toMatch(/^[A-Za-z&\- ]+$/);
      expect(category.icon.length).toBeGreaterThan(0);
      expect(category.description.length).toBeGreaterThan(0);
    }
  });

  it('sends no ETag: every envelope carries its own timestamp, so a conditional GET never matches', async () => {
    const response = await test.http.get('/api/v1/categories').expect(200);
    expect(response.headers.etag).toBeUndefined();
    await test.http.get('/api/v1/categories').set('If-None-Match', 'W/"anything"').expect(200);
  });
});

describe('health', () => {
  it('answers /healthz and /readyz when both backends are up', async () => {
    expect((await test.http.get('/healthz').expect(200)).body.data).toEqual({ status: 'ok' });
    expect((await test.http.get('/readyz').expect(200)).body.data).toEqual({ database: true, bus: true });
  });

  it('answers /readyz with 503 and 5030 when the event bus is down', async () => {
    const bus = test.runtime.bus;
    const originalPing = bus.ping;
    bus.ping = () => Promise.reject(new Error('connection refused'));
    try {
      const response = await test.http.get('/readyz').expect(503);
      expect(response.body).toMatchObject({ code: 5030, data: { database: true, bus: false } });
    } finally {
      bus.ping = originalPing;
    }
  });
});

describe('OpenAPI', () => {
  it('serves an OpenAPI 3.1 document that lists every route the server has', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    expect(document.openapi).toBe('3.1.0');
    const documented = new Set(
      Object.entries(document.paths as Record<string, Record<string, unknown>>).flatMap(([path, operations]) =>
        Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
      ),
    );
    const served = routesOf(test.app).filter((route) => !route.startsWith('GET /docs'));
    expect(served.length).toBeGreaterThan(5);
    for (const route of served) expect(documented, `${route} is not documented`).toContain(route);
    expect(documented.size).toBe(served.length);
  });

  it('is a structurally valid document whose references all resolve', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const text = JSON.stringify(document);
    for (const [, name] of text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      expect(document.components.schemas, `missing component ${name}`).toHaveProperty(name!);
    }
    expect(text).not.toContain('#/$defs/');
    for (const operations of Object.values(document.paths as Record<string, Record<string, { operationId: string; responses: object }>>)) {
      for (const operation of Object.values(operations)) {
        expect(operation.operationId).toMatch(/^[A-Za-z0-9]+$/);
        expect(Object.keys(operation.responses).length).toBeGreaterThan(0);
      }
    }
    const operationIds = Object.values(document.paths as Record<string, Record<string, { operationId: string }>>).flatMap((ops) =>
      Object.values(ops).map((op) => op.operationId),
    );
    expect(new Set(operationIds).size).toBe(operationIds.length);
  });

  it('compiles, every schema of it, under JSON Schema 2020-12 (Ajv), and names every operation and webhook once', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const ajv = documentAjv(document);
    let compiled = 0;
    const operations = Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ at: ['paths', path, method], operation })),
    );
    const webhooks = Object.entries(document.webhooks as Record<string, { post: Operation }>).map(([name, item]) => ({
      at: ['webhooks', name, 'post'],
      operation: item.post,
    }));
    for (const { at, operation } of [...operations, ...webhooks]) {
      for (const [status, answer] of Object.entries(operation.responses)) {
        for (const type of Object.keys(answer.content ?? {})) {
          ajv.compile(schemaRef([...at, 'responses', status, 'content', type, 'schema']));
          compiled++;
        }
      }
      for (const type of Object.keys(operation.requestBody?.content ?? {})) {
        ajv.compile(schemaRef([...at, 'requestBody', 'content', type, 'schema']));
        compiled++;
      }
    }
    expect(compiled).toBeGreaterThan(300);
    const names = [...operations, ...webhooks].map(({ operation }) => operation.operationId);
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9]+$/);
    expect(new Set(names).size).toBe(names.length);
    // A webhook carries no credential of the receiver's: its security is declared empty, not left out.
    for (const { operation } of webhooks) expect(operation.security).toEqual([]);
  });

  it('tells a failure from a success by the schema alone, even under one HTTP status (the device poll)', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const poll = documentAjv(document).compile(
      schemaRef(['paths', '/api/v1/auth/device-auth/poll', 'post', 'responses', '200', 'content', 'application/json', 'schema']),
    );
    const approved = { status: 'approved', api_key: 'mk_x', user_id: '7f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f', agent_platform_type: 'custom_mcp' };
    const pending = { code: 4801, message: 'authorization_pending', data: null, timestamp: 1 };
    // oneOf: each must match exactly one branch; a success with an error's code matches none.
    expect(poll(pending), JSON.stringify(poll.errors)).toBe(true);
    expect(poll({ ...pending, code: 4040 })).toBe(true);
    expect(poll({ ...pending, code: 1234 })).toBe(false);
    expect(poll({ code: 0, message: 'success', data: approved, timestamp: 1 }), JSON.stringify(poll.errors)).toBe(true);
    expect(poll({ code: 0, message: 'success', data: null, timestamp: 1 })).toBe(false);
  });

  it('declares what the JSON-RPC and MCP endpoints answer in their own protocols', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const rpc = document.paths['/api/v1/rpc'].post.responses;
    expect(Object.keys(rpc['200'].content)).toEqual(['application/json', 'text/event-stream']);
    expect(rpc['200'].content['text/event-stream'].schema.description).toContain('SendStreamingMessage');
    expect(Object.keys(rpc)).toEqual(expect.arrayContaining(['204', '400', '401', '413', '429']));
    expect(rpc['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/JsonRpcRefusal' });
    const mcp = document.paths['/mcp'].post.responses;
    expect(Object.keys(mcp)).toEqual(expect.arrayContaining(['202', '400', '401', '403', '406', '413', '415', '429']));
    expect(mcp['403'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/JsonRpcRefusal' });
    expect(document.paths['/api/v1/public/openapi.json'].get.responses['304']).toBeDefined();
  });

  it('flags, through the suite-wide check, an answer the document does not declare', async () => {
    const categories = await test.http.get('/api/v1/categories').expect(200);
    const answer = { status: 200, headers: { 'content-type': 'application/json' }, text: categories.text };
    expect(nonConformance('get', '/api/v1/categories', answer)).toBeUndefined();
    expect(nonConformance('get', '/api/v1/categories?x=1', { ...answer, text: JSON.stringify({ ...categories.body, code: 7 }) })).toMatch(
      /GET \/api\/v1\/categories 200: \/code must be equal to constant/,
    );
    expect(nonConformance('get', '/api/v1/categories', { ...answer, status: 418 })).toMatch(/answered 418, which it does not declare/);
    const withExtra = { ...categories.body, data: [{ ...categories.body.data[0], extra: true }] };
    expect(nonConformance('get', '/api/v1/categories', { ...answer, text: JSON.stringify(withExtra) })).toMatch(/additional properties/);
  });

  it('documents request bodies from the same schema that validates them', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const signup = document.paths['/api/v1/auth/signup'].post;
    const reference: string = signup.requestBody.content['application/json'].schema.$ref;
    const schema = document.components.schemas[reference.split('/').pop()!];
    expect(schema.required).toEqual(expect.arrayContaining(['email', 'password']));
    expect(Object.keys(signup.responses)).toEqual(expect.arrayContaining(['201', '400', '409']));
  });

  it('serves the interactive reference page at /docs with its assets', async () => {
    const page = await test.http.get('/docs').expect(200);
    expect(page.text).toContain('/api/v1/public/openapi.json');
    await test.http.get('/docs/assets/swagger-ui-bundle.js').expect(200);
  });
});

/** Every (method, path) the express app serves, read from its router, in OpenAPI path syntax. */
function routesOf(app: TestApp['app']): string[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };
  const out: string[] = [];
  const walk = (stack: Layer[]) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods)) out.push(`${method.toUpperCase()} ${layer.route.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`);
      } else if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out;
}
