import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../../src/app.ts';
import { sendJson } from '../../rest/envelope.ts';
import { createRouteLookup } from '../../rest/route-lookup.ts';
import type { Actor } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';

/**
 * The hot routes' lookup (rest/route-lookup.ts) finds the route express's router would, for every
 * route of the table and paths made to confuse them, and a request it serves answers exactly as
 * the same request served through express's middleware and router.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

/** The router's choice: the index of the route whose handler runs, or null when none matches. */
function routerChoice(router: express.Router, method: string, path: string): Promise<number | null> {
  return new Promise((resolve) => {
    // A matched route's handler resolves with its index; the router's final callback with null.
    const request = { method, url: path, headers: {}, resolveWith: resolve } as unknown as Request;
    const response = { locals: {} } as unknown as Response;
    (router as unknown as { handle(request: Request, response: Response, done: () => void): void }).handle(request, response, () => resolve(null));
  });
}

describe('the lookup', () => {
  it('chooses the route the router chooses, for every route and for paths that confuse them', async () => {
    const routes = allRoutes(test.runtime.engine);
    const router = express.Router({ caseSensitive: true, strict: true });
    const lookup = createRouteLookup({ readsOwnBody: () => false });
    const indexOf = new Map<unknown, number>();
    routes.forEach((spec, index) => {
      const handler = (request: Request) => (request as unknown as { resolveWith(index: number): void }).resolveWith(index);
      const expressRoute = router.route(spec.path);
      expressRoute[spec.method](handler);
      lookup.add(spec.method, spec.path, handler, expressRoute);
      indexOf.set(handler, index);
    });
    // Every literal segment of the table, in every parameter's place.
    const literals = [...new Set(routes.flatMap((spec) => spec.path.split('/').filter((part) => part !== '' && !part.startsWith(':'))))];
    const values = ['x', randomUUID(), 'a.b', '', ...literals];
    const paths = new Set<string>();
    for (const spec of routes) {
      const parts = spec.path.split('/');
      const params = parts.flatMap((part, index) => (part.startsWith(':') ? [index] : []));
      const fill = (at: number, value: string) => parts.map((part, index) => (index === at ? value : part.startsWith(':') ? 'x' : part)).join('/');
      paths.add(fill(-1, ''));
      paths.add(`${fill(-1, '')}/`);
      paths.add(fill(-1, '').toUpperCase());
      paths.add(fill(-1, '').replace(/\/$/, ''));
      for (const at of params) for (const value of values) paths.add(fill(at, value));
    }
    const disagreements: string[] = [];
    for (const method of ['get', 'post', 'put', 'delete']) {
      for (const path of paths) {
        const expected = await routerChoice(router, method.toUpperCase(), path);
        const found = lookup.find(method.toUpperCase(), path);
        const actual = found === null ? null : indexOf.get(found.entry.handle)!;
        if (actual !== expected) disagreements.push(`${method} ${path}: router ${expected}, lookup ${actual}`);
      }
    }
    expect(paths.size).toBeGreaterThan(500);
    expect(disagreements).toEqual([]);
  });

  it('refuses a path it could not match as the router does', () => {
    const lookup = createRouteLookup({ readsOwnBody: () => false });
    expect(() => lookup.add('get', '/files/*rest', () => {}, null)).toThrow(/beyond literal segments/);
    expect(() => lookup.add('get', '/a/:b.:c', () => {}, null)).toThrow(/beyond literal segments/);
  });
});

describe('a hot read', () => {
  let buyer: Actor;
  let transactionId: string;
  beforeAll(async () => {
    const market = await agentMarket(test);
    buyer = market.buyer;
    transactionId = (await buy(test, buyer, market.capability.id)).id;
  });

  /** Status, the headers a client sees (without those that change per request) and the body without its timestamp. */
  const answerOf = (response: { status: number; headers: Record<string, string>; body: Record<string, unknown> }) => {
    const { date: _date, 'x-request-id': requestId, connection: _connection, 'keep-alive': _keepAlive, ...headers } = response.headers;
    const { timestamp: _timestamp, ...body } = response.body;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    return { status: response.status, headers, body };
  };

  it('answers the same whether the lookup serves it or express (a request with a body goes through express)', async () => {
    const path = `/api/v1/transactions/${transactionId}`;
    for (const [headers, what] of [
      [buyer.headers, 'the buyer'],
      [{ ...buyer.headers, 'X-Platform-User-Id': randomUUID() }, 'an unknown user'],
      [{}, 'no credentials'],
    ] as const) {
      const fast = await test.http.get(path).set(headers);
      const throughExpress = await test.http.get(path).set(headers).set('Content-Length', '0');
      expect(answerOf(fast), what).toEqual(answerOf(throughExpress));
    }
    const missing = `/api/v1/transactions/${randomUUID()}`;
    expect(answerOf(await test.http.get(missing).set(buyer.headers))).toEqual(
      answerOf(await test.http.get(missing).set(buyer.headers).set('Content-Length', '0')),
    );
    const malformed = '/api/v1/transactions/not-a-uuid';
    expect(answerOf(await test.http.get(malformed).set(buyer.headers))).toEqual(
      answerOf(await test.http.get(malformed).set(buyer.headers).set('Content-Length', '0')),
    );
  });

  it('keeps the client request id and leaves percent-encoded paths to the router', async () => {
    const response = await test.http.get(`/api/v1/transactions/${transactionId}`).set(buyer.headers).set('X-Request-Id', 'client-chosen.1').expect(200);
    expect(response.headers['x-request-id']).toBe('client-chosen.1');
    const badEncoding = await test.http.get('/api/v1/transactions/%E0%A4%A').set(buyer.headers);
    expect(badEncoding.body.code).toBe(4000);
    const encoded = await test.http
      .get(`/api/v1/transactions/${transactionId.replace('-', '%2D')}`)
      .set(buyer.headers)
      .expect(200);
    expect(encoded.body.data.id).toBe(transactionId);
  });
});

describe('a hot write', () => {
  let buyer: Actor;
  let seller: Actor;
  let capabilityId: string;
  beforeAll(async () => {
    const market = await agentMarket(test, '100.00');
    buyer = market.buyer;
    seller = market.seller;
    capabilityId = market.capability.id;
  });

  /** Status, the headers a client sees (without those that change per request) and the body without its timestamp. */
  const answerOf = (response: { status: number; headers: Record<string, string>; body: Record<string, unknown> }) => {
    const { date: _date, 'x-request-id': _requestId, connection: _connection, 'keep-alive': _keepAlive, ...headers } = response.headers;
    const { timestamp: _timestamp, ...body } = response.body;
    return { status: response.status, headers, body };
  };
  // A percent-encoded path goes through express's middleware and router; the same path spelled plainly is the lookup's.
  const throughExpress = (id: string) => id.replace('-', '%2D');

  it('answers refusals the same whether the lookup serves it or express', async () => {
    const { id } = await buy(test, buyer, capabilityId);
    const post = (path: string) => test.http.post(path);
    const cases: [string, (path: string) => supertest.Test][] = [
      ['no credentials', (path) => post(path)],
      ['bad JSON', (path) => post(path).set(buyer.headers).set('Content-Type', 'application/json').send('{"reason":')],
      ['not JSON', (path) => post(path).set(buyer.headers).set('Content-Type', 'text/plain').send('reason')],
      ['a JSON array', (path) => post(path).set(buyer.headers).send([1])],
      ['text PostgreSQL cannot store', (path) => post(path).set(buyer.headers).send({ reason: 'nul \u0000 here' })],
      [
        'too large',
        (path) =>
          post(path)
            .set(buyer.headers)
            .send({ reason: 'x'.repeat(2_000_000) }),
      ],
      ['a party that may not', (path) => post(path).set(seller.headers)],
      ['a step the state does not allow', (path) => post(path.replace('/freeze', '/confirm')).set(buyer.headers)],
      ['a bad idempotency key', (path) => post(path).set(buyer.headers).set('Idempotency-Key', ' ')],
    ];
    for (const [what, send] of cases) {
      const fast = await send(`/api/v1/transactions/${id}/freeze`);
      const slow = await send(`/api/v1/transactions/${throughExpress(id)}/freeze`);
      expect(fast.status, what).toBeGreaterThanOrEqual(400);
      expect(answerOf(fast), what).toEqual(answerOf(slow));
    }
    const missing = randomUUID();
    expect(answerOf(await act(test, buyer, missing, 'freeze'))).toEqual(answerOf(await act(test, buyer, throughExpress(missing), 'freeze')));
  });

  it('moves a transaction the same whether the lookup serves it or express', async () => {
    const viaLookup = await buy(test, buyer, capabilityId);
    const viaExpress = await buy(test, buyer, capabilityId);
    const key = randomUUID();
    for (const [actor, action] of [
      [buyer, 'freeze'],
      [seller, 'accept'],
      [seller, 'deliver'],
    ] as const) {
      const body = action === 'deliver' ? { result_payload: { answer: 42 } } : undefined;
      const fast = await act(test, actor, viaLookup.id, action, body).set('Idempotency-Key', `${key}-${action}-fast`);
      const slow = await act(test, actor, throughExpress(viaExpress.id), action, body).set('Idempotency-Key', `${key}-${action}-slow`);
      // The two transactions differ only in their own ids (the transaction's, its context's) and times.
      const same = (answer: ReturnType<typeof answerOf>, id: string) => {
        const own = [id, (answer.body.data as { context_id: string }).context_id];
        const text = own.reduce((json, value) => json.replaceAll(value, 'OWN'), JSON.stringify(answer));
        return JSON.parse(text.replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"TIME"')) as unknown;
      };
      expect(fast.status, action).toBe(200);
      expect(same(answerOf(fast), viaLookup.id), action).toEqual(same(answerOf(slow), viaExpress.id));
      // A replay under the same key is answered from the stored response, by either way.
      const replayed = await act(test, actor, viaLookup.id, action, body).set('Idempotency-Key', `${key}-${action}-fast`);
      expect(replayed.headers['idempotent-replayed'], action).toBe('true');
      expect(replayed.body.data, action).toEqual(fast.body.data);
    }
  });
});

describe("the envelope's own JSON writer", () => {
  it("sends what express's response.json sends: status, headers and body", async () => {
    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    const body = { code: 0, message: 'success', data: { text: 'ünïcödé and 漢字', amount: '1.00' }, timestamp: 1 };
    app.get('/express', (_request, response) => response.status(201).json(body));
    app.get('/own', (_request, response) => sendJson(response, 201, body));
    app.get('/express-replayed', (_request, response) => response.setHeader('Idempotent-Replayed', 'true').status(200).json(body));
    app.get('/own-replayed', (_request, response) => sendJson(response.setHeader('Idempotent-Replayed', 'true'), 200, body));
    const http = supertest(app);
    const seen = (response: supertest.Response) => {
      const { date: _date, ...headers } = response.headers;
      return { status: response.status, headers, text: response.text };
    };
    expect(seen(await http.get('/own'))).toEqual(seen(await http.get('/express')));
    expect(seen(await http.get('/own-replayed'))).toEqual(seen(await http.get('/express-replayed')));
    // Express answers these itself: a HEAD without a body, and a conditional request with 304.
    expect(seen(await http.head('/own'))).toEqual(seen(await http.head('/express')));
    expect(seen(await http.get('/own').set('If-None-Match', '*'))).toEqual(seen(await http.get('/express').set('If-None-Match', '*')));
  });
});
