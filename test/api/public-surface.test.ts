import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';

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
