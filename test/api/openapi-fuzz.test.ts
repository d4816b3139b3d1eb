import { randomUUID } from 'node:crypto';
import http, { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { createMethods } from '../../rpc/methods.ts';
import { type TestApp, startTestApp, testAdminToken } from '../helpers/app.ts';
import { load as checkAnswersAgainst, nonConformance } from '../helpers/conformance.ts';
import { type Schema, arbitraryOf, deeplyNested, mutatedBody, nastyValue } from '../helpers/schema-arbitrary.ts';

/**
 * Fuzzing from the served OpenAPI document (issue 16, point 3). Every operation the document
 * lists (a new route is fuzzed without a new test) gets requests generated from its own schemas,
 * valid and invalid: wrong types, missing and unknown fields, huge strings, deep nesting, lone
 * surrogates, edge numbers, bad ids, invalid JSON, other content types, duplicated and bad
 * headers. Every answer must be below 500, an envelope, with a status the document declares for
 * the operation and a code that status lists; a refused request must leave every balance as it
 * was. Budget: FUZZ_RUNS (default 40) valid and as many invalid requests per operation, about
 * 4,500 requests in all; a failure prints its seed and the shrunk request.
 */
const runs = Number(process.env.FUZZ_RUNS ?? 40);
const admin = { 'x-admin-token': testAdminToken };
let test: TestApp;
let server: Server;
let port: number;
let document: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

interface Operation {
  parameters?: { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: Schema }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, unknown> }>;
  security?: Record<string, string[]>[];
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** node:http, not fetch: it sends what fetch would refuse (duplicated headers, any body text). */
function send(method: string, path: string, headers: Record<string, string | string[]>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, method, path, headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        const contentType = response.headers['content-type'] ?? '';
        if (contentType.startsWith('text/event-stream')) {
          response.destroy();
          return resolve({ status: response.statusCode!, contentType, body: '' });
        }
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode!, contentType, body: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

let owner: Record<string, string>;
let ids: Record<string, string>;

beforeAll(async () => {
  test = await startTestApp(Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), 'off'])));
  server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  document = JSON.parse((await send('GET', '/api/v1/public/openapi.json', {})).body);
  checkAnswersAgainst(document);
  const json = async (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
    JSON.parse((await send(method, path, { 'content-type': 'application/json', ...headers }, body === undefined ? undefined : JSON.stringify(body))).body).data;
  const key = await json('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true });
  const agent = async () => {
    const headers = { 'x-api-key': key.api_key as string, 'x-platform-user-id': randomUUID() };
    return { headers, id: (await json('GET', '/api/v1/auth/me', headers)).user_id as string };
  };
  const [buyer, seller] = [await agent(), await agent()];
  owner = buyer.headers;
  await json('POST', '/api/v1/admin/wallet/credit', admin, { user_id: buyer.id, currency: 'UT', amount: '500.00' });
  const capability = await json('POST', '/api/v1/capabilities', seller.headers, {
    title: 'Translate contracts',
    description: 'Into Chinese',
    category: 'translation',
    capability_type: 'service',
    pricing_model: 'per_hour',
    price_ut: '1.00',
  });
  const demand = await json('POST', '/api/v1/demands', buyer.headers, { description: 'Translate a contract into Chinese' });
  const bought = await json(
    'POST',
    '/api/v1/transactions',
    { ...buyer.headers, 'idempotency-key': randomUUID() },
    { capability_id: capability.id, booked_hours: 1 },
  );
  // A task of the owner's with a selection of the seller's skill waiting: the task and push routes (list, withdraw) reach real rows.
  const task = await json('POST', '/api/v1/tasks/', buyer.headers, {
    title: 'Translate a contract',
    description: 'Into Chinese',
    mode: 'online',
    bounty_amount: '5.00',
  });
  const skill = await json('POST', '/api/v1/skills/', seller.headers, { name: 'Contract translation', description: 'Into Chinese', category: 'translation' });
  const selection = await json('POST', `/api/v1/tasks/${task.id}/select-skill`, buyer.headers, { skill_id: skill.id });
  ids = { cap_id: capability.id, demand_id: demand.id, tx_id: bought.id, id: key.id, user_id: buyer.id, task_id: task.id, push_id: selection.id };
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

/** Every balance of the market, to compare before and after a refused request. */
const balances = async () => JSON.stringify(await test.runtime.engine.dependencies.db('accounts').orderBy('id').select('id', 'available', 'frozen'));

/** The codes a declared status lists ("4000 validation_error, 4001 invalid_json"). */
const codesOf = (description: string) => [...description.matchAll(/\b(\d{4}) [a-z_]+/g)].map((match) => Number(match[1]));

/** What the document allows this operation to answer: the status, and the envelope's code under it. */
function expectDeclared(operation: Operation, answer: Answer, what: string, method: string, template: string) {
  expect(answer.status, `${what}: ${answer.body.slice(0, 300)}`).toBeLessThan(500);
  // The body too: what the document declares for that status, checked by JSON Schema.
  const checked = { status: answer.status, headers: { 'content-type': answer.contentType }, text: answer.body };
  expect(nonConformance(method.toLowerCase(), template, checked, template), what).toBeUndefined();
  const declared = operation.responses[String(answer.status)];
  expect(declared, `${what}: status ${answer.status} is not declared (${answer.body.slice(0, 200)})`).toBeDefined();
  if (!answer.contentType.startsWith('application/json') || answer.status === 304) return;
  const body = JSON.parse(answer.body) as { code?: unknown; message?: unknown; timestamp?: unknown };
  if (answer.status >= 400) {
    expect(typeof body.message, what).toBe('string');
    expect(typeof body.timestamp, what).toBe('number');
    expect(codesOf(declared!.description), `${what}: code ${String(body.code)} under ${answer.status}`).toContain(body.code);
  } else if (declared!.content?.['application/json'] && 'code' in body) {
    expect([0, ...codesOf(declared!.description)], `${what}: code under ${answer.status}`).toContain(body.code);
  }
}

interface Generated {
  path: string;
  headers: Record<string, string | string[]>;
  body?: string;
}

/**
 * A request line and headers above 16 KiB are refused by Node's HTTP parser with a bare 431 before
 * the application sees them (docs/decisions/operations-and-testing.md "Fuzzing from the served document"): values in the URL stay below that, huge
 * values go in bodies.
 */
/** A lone surrogate cannot be percent-encoded as UTF-8: it goes as the bytes a careless encoder would send. */
const encodedForUrl = (text: string) =>
  text
    .replace(/[\uD800-\uDFFF]/g, '\u0000')
    .split('\u0000')
    .map(encodeURIComponent)
    .join('%ED%A0%80');
const urlSized = (encoded: string) => encoded.slice(0, 2_000).replace(/%[0-9A-F]?$/i, '');
const pathValue = fc.oneof(
  fc.constant('world'),
  fc.uuid(),
  fc.constantFrom('not-a-uuid', '%F0%9F%A4%96', '..%2F..', '0', 'x'.repeat(2_000), '%00', '%ED%A0%80'),
);
const credentials = fc.constantFrom<Record<string, string | string[]>>(
  {},
  {},
  {},
  admin,
  { authorization: 'Bearer not.a.token' },
  { 'x-api-key': 'mk_nothing', 'x-platform-user-id': 'nope' },
  { 'idempotency-key': ['one', 'two'] },
  { 'idempotency-key': 'x'.repeat(200) },
  { 'idempotency-key': '' },
  { 'content-type': 'application/json; charset=utf-16' },
);
const rawBody = fc.constantFrom(
  '{',
  '{"a":',
  '\uFEFF{}',
  'null',
  '[]',
  '"text"',
  '1',
  '{"__proto__":{"polluted":true}}',
  'x'.repeat(2_000_000),
  '{"a":1,"a":2}',
  deeplyNested(10_000),
  `[${'['.repeat(50_000)}${']'.repeat(50_000)}]`,
);

function generated(path: string, operation: Operation, valid: boolean): fc.Arbitrary<Generated> {
  const parameters = operation.parameters ?? [];
  const bodySchema = operation.requestBody?.content['application/json']?.schema;
  const components = document.components.schemas;
  const validBody = bodySchema ? arbitraryOf(bodySchema, components) : fc.constant(undefined);
  const body = valid
    ? validBody.map((value) => (value === undefined ? undefined : JSON.stringify(value)))
    : fc.oneof(
        mutatedBody(validBody).map((value) => JSON.stringify(value)),
        rawBody,
      );
  const query = fc.tuple(
    ...parameters
      .filter((parameter) => parameter.in === 'query')
      .map((parameter) =>
        fc
          .option(valid ? arbitraryOf(parameter.schema, components) : fc.oneof(arbitraryOf(parameter.schema, components), nastyValue), { nil: undefined })
          .map((value) =>
            value === undefined
              ? ''
              : `${encodeURIComponent(parameter.name)}=${urlSized(encodedForUrl(typeof value === 'string' ? value : JSON.stringify(value)))}`,
          ),
      ),
  );
  const pathParameters = fc.tuple(
    ...parameters
      .filter((parameter) => parameter.in === 'path')
      .map((parameter) =>
        (valid ? fc.constant('world') : pathValue).map((value) => [parameter.name, value === 'world' ? (ids[parameter.name] ?? randomUUID()) : value] as const),
      ),
  );
  const contentType = valid
    ? fc.constant('application/json')
    : fc.constantFrom(
        'application/json',
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/xml',
        'multipart/form-data; boundary=x',
      );
  return fc
    .record({ body, query, pathParameters, contentType, credentials: valid ? fc.constant(owner) : fc.oneof(fc.constant(owner), credentials) })
    .map((parts) => {
      const filled = parts.pathParameters.reduce((text, [name, value]) => text.replace(`{${name}}`, value), path);
      const queryText = parts.query.filter(Boolean).join('&');
      const headers: Record<string, string | string[]> = { 'content-type': parts.contentType, 'idempotency-key': randomUUID(), ...parts.credentials };
      return { path: queryText ? `${filled}?${queryText}` : filled, headers, body: parts.body };
    });
}

/** JSON-RPC and MCP speak their own protocols; they are fuzzed in their own describe below. */
const ownProtocols = new Set(['/api/v1/rpc', '/mcp']);

describe('every operation of the served OpenAPI document, fuzzed', () => {
  it('answers generated valid and invalid requests with declared envelopes, never a 5xx, and moves no money when it refuses', async () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })),
    );
    expect(operations.length).toBeGreaterThan(50);
    for (const { path, method, operation } of operations.filter((entry) => !ownProtocols.has(entry.path))) {
      for (const valid of [true, false]) {
        await fc.assert(
          fc.asyncProperty(generated(path, operation, valid), async (request) => {
            const before = await balances();
            const answer = await send(method, request.path, request.headers, method === 'GET' || method === 'DELETE' ? undefined : request.body);
            const what = `${method} ${request.path.slice(0, 120)} ${JSON.stringify(request.headers).slice(0, 200)} ${String(request.body).slice(0, 200)}`;
            expectDeclared(operation, answer, what, method, path);
            if (answer.status >= 400) expect(await balances(), `${what}: a refused request moved money`).toBe(before);
          }),
          { numRuns: runs },
        );
      }
    }
  }, 900_000);
});

describe('the JSON-RPC methods and the MCP tools, fuzzed', () => {
  // Every method of the table (a new method is fuzzed without a new line here), and one that is not there.
  const methods = () => [...Object.keys(createMethods(test.runtime.engine)), 'no/such/method'];
  const pushConfig = fc.record(
    {
      id: fc.option(fc.oneof(fc.string(), nastyValue)),
      url: fc.oneof(fc.constantFrom('https://receiver.example/a2a', 'http://127.0.0.1/x', 'ftp://x', ''), fc.webUrl(), nastyValue),
      token: fc.option(fc.oneof(fc.string(), nastyValue)),
      authentication: fc.option(
        fc.oneof(
          fc.record({ scheme: fc.oneof(fc.string(), nastyValue), credentials: fc.oneof(fc.string(), nastyValue) }),
          fc.record({ schemes: fc.array(fc.oneof(fc.string(), nastyValue)) }),
          nastyValue,
        ),
      ),
    },
    { requiredKeys: [] },
  );
  const params = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record({ id: fc.oneof(fc.constant('world'), fc.uuid(), nastyValue), historyLength: fc.oneof(fc.integer(), nastyValue) }),
    fc.record({
      message: fc.record({
        messageId: fc.oneof(fc.uuid(), nastyValue),
        role: fc.constantFrom('user', 'agent', 'ROLE_USER', 7),
        parts: fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('text'), text: fc.oneof(fc.string(), nastyValue) }),
            fc.record({
              kind: fc.constant('data'),
              data: fc.oneof(fc.record({ capability_id: fc.oneof(fc.constant('world'), fc.uuid(), nastyValue) }), nastyValue),
            }),
            fc.record({ text: nastyValue }),
            nastyValue,
          ),
          { maxLength: 3 },
        ),
      }),
      configuration: fc.option(
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ taskPushNotificationConfig: pushConfig }), fc.record({ pushNotificationConfig: pushConfig })),
      ),
    }),
    // The push config methods' params, in each generation's spelling, on the world's task or another.
    fc
      .record(
        {
          taskId: fc.oneof(fc.constant('world'), fc.uuid(), nastyValue),
          task_id: fc.option(fc.constant('world')),
          id: fc.option(fc.oneof(fc.string(), nastyValue)),
          pageSize: fc.option(fc.oneof(fc.integer(), nastyValue)),
          pageToken: fc.option(fc.oneof(fc.string(), nastyValue)),
        },
        { requiredKeys: [] },
      )
      .chain((base) => pushConfig.map((config) => ({ ...config, ...base }))),
    fc.record(
      {
        taskId: fc.oneof(fc.constant('world'), nastyValue),
        id: fc.oneof(fc.constant('world'), nastyValue),
        pushNotificationConfigId: fc.option(fc.oneof(fc.string(), nastyValue)),
        pushNotificationConfig: fc.oneof(pushConfig, nastyValue),
      },
      { requiredKeys: [] },
    ),
  );

  it('answers every method of every generation with a JSON-RPC 2.0 response and never an internal error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...methods()), params, fc.oneof(fc.uuid(), fc.integer(), fc.constant(null)), async (method, rawParams, id) => {
        const filled = JSON.parse(JSON.stringify(rawParams ?? null).replaceAll('"world"', JSON.stringify(ids.tx_id)));
        const before = await balances();
        const answer = await send(
          'POST',
          '/api/v1/rpc',
          { 'content-type': 'application/json', ...owner },
          JSON.stringify({ jsonrpc: '2.0', id, method, params: filled }),
        );
        const what = `${method} ${JSON.stringify(filled).slice(0, 300)}`;
        expect(answer.status, `${what}: ${answer.body.slice(0, 300)}`).toBeLessThan(500);
        if (answer.contentType.startsWith('text/event-stream')) return;
        const response = JSON.parse(answer.body) as { jsonrpc: string; id: unknown; result?: unknown; error?: { code: number } };
        expect(response.jsonrpc, what).toBe('2.0');
        expect('result' in response !== 'error' in response, what).toBe(true);
        if (response.error) {
          expect(Number.isInteger(response.error.code), what).toBe(true);
          expect(response.error.code, `${what}: ${answer.body.slice(0, 300)}`).not.toBe(-32603);
          expect(await balances(), `${what}: a refused call moved money`).toBe(before);
        }
      }),
      { numRuns: runs * 10 },
    );
  }, 600_000);

  it('answers every MCP tool with a result or a tool error, never an internal error', async () => {
    const { connectMcp } = await import('../helpers/mcp.ts');
    const client = await connectMcp(`http://127.0.0.1:${port}`, owner);
    const { tools } = await client.listTools();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...tools.map((tool) => tool.name)),
        fc.oneof(
          fc.dictionary(
            fc.constantFrom(
              'cap_id',
              'capability_id',
              'demand_id',
              'tx_id',
              'description',
              'title',
              'top_k',
              'max_price',
              'idempotency_key',
              'booked_hours',
              'q',
              'category',
              'page_size',
              'extra',
            ),
            fc.oneof(fc.constant('world'), nastyValue),
            { maxKeys: 4 },
          ),
          fc.constant({}),
        ),
        async (name, args) => {
          const filled = Object.fromEntries(Object.entries(args).map(([key, value]) => [key, value === 'world' ? (ids[key] ?? ids.tx_id) : value]));
          const result = (await client.callTool({ name, arguments: filled })) as { isError?: boolean; content: { type: string; text?: string }[] };
          if (result.isError) {
            const text = result.content[0]?.text ?? '';
            expect(text, `${name} ${JSON.stringify(filled).slice(0, 300)}`).not.toMatch(/"code":\s*5000/);
          }
        },
      ),
      { numRuns: runs * 5 },
    );
    await client.close();
  }, 600_000);
});

describe('defects the fuzzer found, kept as regressions', () => {
  it('declares 4001 and 4130 on operations that read no body: any body is parsed before routing', async () => {
    const answer = await send('POST', `/api/v1/capabilities/${ids.cap_id}/rotate-secret`, { 'content-type': 'application/json', ...owner }, '"just text"');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body).code).toBe(4001);
    const declared = document.paths['/api/v1/capabilities/{cap_id}/rotate-secret']!.post!.responses;
    expect(codesOf(declared['400']!.description)).toContain(4001);
    expect(codesOf(declared['413']!.description)).toContain(4130);
  });

  it('answers an MCP tool argument PostgreSQL cannot store with a tool error, not a failed HTTP exchange', async () => {
    const { callTool, connectMcp } = await import('../helpers/mcp.ts');
    const client = await connectMcp(`http://127.0.0.1:${port}`, owner);
    const outcome = await callTool(client, 'get_capability', { cap_id: '\uD800' });
    expect(outcome).toMatchObject({ isError: true, data: { code: 4000, data: { errors: [{ path: 'arguments.cap_id' }] } } });
    // The session goes on.
    expect((await callTool(client, 'get_wallet')).isError).toBe(false);
    await client.close();
  });
});
