import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../src/app.ts';
import { formatAmount } from '../../src/domain/money.ts';
import { limits } from '../../src/limits.ts';
import { createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createCapability } from '../helpers/market.ts';

/**
 * Answers that tell a newcomer what to do (issue 15 points 11 and 12): the content type a JSON
 * body needs, the maximum of an amount, "required" for a field left out, and one rule for unknown
 * fields on every route.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const errorsOf = (body: { data: { errors: { path: string; message: string }[] } }) => body.data.errors;

describe('a JSON body sent with another content type', () => {
  it('says the body must be sent as application/json, also where the body is optional', async () => {
    const agent = await createAgent(test);
    for (const [path, type] of [
      ['/api/v1/demands', 'text/plain'],
      ['/api/v1/demands', 'application/x-www-form-urlencoded'],
      ['/api/v1/capabilities/match', 'text/plain'],
    ] as const) {
      const response = await test.http.post(path).set(agent.headers).set('Content-Type', type).send('{"title":"x","description":"y"}');
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 4001, data: { detail: expect.stringContaining('Content-Type: application/json') } });
      expect(response.body.data.detail).toContain(type);
    }
    const capability = await createCapability(test, await createAgent(test), { pricing_model: 'per_query', callback_url: 'https://seller.example/callback' });
    const dispute = await test.http
      .post(`/api/v1/transactions/${capability.id}/dispute`)
      .set(agent.headers)
      .set('Content-Type', 'text/plain')
      .send('{"reason":"late"}');
    expect(dispute.body).toMatchObject({ code: 4001 });
  });
});

describe('validation messages', () => {
  it('an amount above the maximum says the maximum', async () => {
    const agent = await createAgent(test);
    const response = await test.http
      .post('/api/v1/demands')
      .set(agent.headers)
      .send({ title: 'x', description: 'y', max_price_ut: '99999999999999999999' })
      .expect(400);
    expect(errorsOf(response.body)).toEqual([{ path: 'body.max_price_ut', message: `must be at most ${formatAmount(limits.amountMinorUnitsMax)}` }]);
    const malformed = await test.http.post('/api/v1/demands').set(agent.headers).send({ title: 'x', description: 'y', max_price_ut: '1.234' }).expect(400);
    expect(errorsOf(malformed.body)[0]!.message).toContain('at most two fraction digits');
  });

  it('a field left out is "required", whatever its format or list of values', async () => {
    const agent = await createAgent(test);
    const match = await test.http.post('/api/v1/capabilities/match').set(agent.headers).send({}).expect(400);
    expect(errorsOf(match.body)).toEqual([{ path: 'body.demand_id', message: 'required' }]);
    const capability = await test.http
      .post('/api/v1/capabilities')
      .set(agent.headers)
      .send({ title: 'Logo design', description: 'Logos', price_ut: '5.00', pricing_model: 'per_use' })
      .expect(400);
    expect(errorsOf(capability.body)).toEqual([
      { path: 'body.category', message: 'required' },
      { path: 'body.capability_type', message: 'required' },
    ]);
    // A value that is there but wrong keeps the precise message.
    const wrong = await test.http.post('/api/v1/capabilities/match').set(agent.headers).send({ demand_id: 'nope' }).expect(400);
    expect(errorsOf(wrong.body)[0]!.message).not.toBe('required');
  });
});

describe('unknown fields', () => {
  it('every route with a body refuses a field it does not know (one rule, walked over the route table)', () => {
    // The JSON-RPC and MCP endpoints answer in their own protocols, whose messages are not ours to close.
    const lenient = allRoutes(test.runtime.engine)
      .filter((spec) => spec.body && !spec.rawResponse)
      .filter((spec) => !(spec.body!.safeParse({ field_nobody_knows: 1 }).error?.issues ?? []).some((issue) => issue.code === 'unrecognized_keys'))
      .map((spec) => `${spec.method.toUpperCase()} ${spec.path}`);
    expect(lenient).toEqual([]);
  });

  it('device authorization refuses them too, naming the field', async () => {
    const response = await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'claude_code', scope: 'all' }).expect(400);
    expect(response.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body', message: 'has a field this request does not take: scope' }] } });
  });
});

describe('the OpenAPI document', () => {
  it('declares the Idempotency-Key header on every operation that honours one, and only there', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const withHeader = (operation: { parameters?: { name: string; in: string }[] }) =>
      (operation.parameters ?? []).some((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
    const honouring = [
      'post /api/v1/transactions',
      'post /api/v1/transactions/{tx_id}/freeze',
      'post /api/v1/transactions/{tx_id}/confirm',
      'post /api/v1/capabilities/{cap_id}/invoke',
      'post /api/v1/capabilities',
      'post /api/v1/capabilities/batch',
      'post /api/v1/demands',
      'post /api/v1/demands/{demand_id}/cancel',
      'post /api/v1/admin/wallet/credit',
      'post /api/v1/admin/transactions/{tx_id}/resolve',
    ];
    for (const name of honouring) {
      const [method, path] = name.split(' ') as [string, string];
      expect(withHeader(document.paths[path][method]), name).toBe(true);
    }
    // Every operation whose body takes an idempotency_key declares the header too.
    for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(methods)) {
        const body = JSON.stringify(operation.requestBody ?? {});
        if (body.includes('idempotency_key') || body.includes('#/components/schemas/')) {
          const schemaText = JSON.stringify(operation.requestBody?.content?.['application/json']?.schema ?? {});
          const referenced = /#\/components\/schemas\/(\w+)/.exec(schemaText)?.[1];
          const properties = JSON.stringify(referenced ? document.components.schemas[referenced] : operation.requestBody);
          if (properties.includes('"idempotency_key"')) expect(withHeader(operation), `${method} ${path}`).toBe(true);
        }
      }
    }
    expect(withHeader(document.paths['/api/v1/wallet/transactions'].get)).toBe(false);
  });

  it('names every pricing model invoke accepts', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const summary: string = document.paths['/api/v1/capabilities/{cap_id}/invoke'].post.summary;
    expect(summary).toContain('per_query');
    expect(summary).toContain('per_use');
  });
});
