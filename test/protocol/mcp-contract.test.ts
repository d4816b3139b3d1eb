import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type CallToolResult, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpTools } from '../../mcp/tools.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { agentMarket, credit } from '../helpers/market.ts';
import { connectMcp, unionsIn } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * The contract every MCP tool keeps (issue 20, docs/mcp.md "Tools"): a title, hints, an
 * outputSchema its answers match, input schemas without unions, one rule for unknown arguments,
 * and protocol errors said once and short.
 */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const clients: Client[] = [];
let tools: Tool[];

beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
  const client = await connectMcp(server.url, (await createAgent(test)).headers);
  clients.push(client);
  tools = (await client.listTools()).tools;
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.close();
  await test?.close();
});

/** An SDK client that listed the tools, so it validates every structuredContent against the outputSchema, as clients do. */
async function clientOf(actor: Actor) {
  const client = await connectMcp(server.url, actor.headers);
  clients.push(client);
  await client.listTools();
  return client;
}

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));

/** The outputSchema with every object closed: a field the answer has and the schema does not declare is a failure. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const node = Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [key, ['enum', 'const', 'examples', 'default'].includes(key) ? value : closed(value)]),
  );
  if (node.type === 'object' && node.properties && node.additionalProperties === undefined) node.additionalProperties = false;
  return node;
}

const exercised = new Set<string>();

/** Calls a tool, expects success, and checks its structuredContent against the published outputSchema (open, and closed). */
async function succeed(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content[0]?.type === 'text' ? result.content[0].text : '';
  expect(result.isError ?? false, `${name}: ${text}`).toBe(false);
  const structured = result.structuredContent as Record<string, any>;
  expect(structured, name).toEqual(JSON.parse(text));
  const schema = tools.find((tool) => tool.name === name)!.outputSchema!;
  for (const variant of [schema, closed(schema) as object]) {
    const validate = ajv.compile(variant);
    const valid = validate(structured);
    const problems = (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`).join('; ');
    expect(valid, `${name}: ${problems}`).toBe(true);
  }
  exercised.add(name);
  return structured;
}

async function fail(client: Client, name: string, args: unknown) {
  const result = (await client.callTool({ name, arguments: args as Record<string, unknown> })) as CallToolResult;
  expect(result.isError, name).toBe(true);
  // A refusal carries the envelope as text and no structuredContent (which a client would check against the outputSchema).
  expect(result.structuredContent, name).toBeUndefined();
  return JSON.parse((result.content[0] as { text: string }).text) as {
    code: number;
    message: string;
    data: { errors?: { path: string; message: string }[] } & Record<string, unknown>;
  };
}

/** One raw JSON-RPC exchange with /mcp, as a client that does not use the SDK sends it. */
async function rpc(actor: Actor, method: string, params: unknown) {
  const response = await test.http
    .post('/mcp')
    .set(actor.headers)
    .set('Accept', 'application/json, text/event-stream')
    .send({ jsonrpc: '2.0', id: 7, method, params });
  expect(response.status, `${method} ${JSON.stringify(params)}: ${response.text}`).toBe(200);
  return response.body as { result?: any; error?: { code: number; message: string; data?: unknown } };
}

// The constraining keywords of the MCP Inspector CLI's schema check (--strict; docs/mcp.md "Inspector").
const constraining = new Set([
  'type',
  'enum',
  'const',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'format',
  'contentMediaType',
  'contentEncoding',
  'contentSchema',
  'maxItems',
  'minItems',
  'uniqueItems',
  'maxContains',
  'minContains',
  'maxProperties',
  'minProperties',
  'required',
  'dependentRequired',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'items',
  'prefixItems',
  'contains',
  'additionalItems',
  'unevaluatedItems',
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'dependentSchemas',
  'dependencies',
  '$ref',
  '$dynamicRef',
  '$recursiveRef',
]);
const booleanValued = new Set(['additionalProperties', 'unevaluatedProperties', 'additionalItems', 'unevaluatedItems']);
const schemaKeywords = [
  'items',
  'contains',
  'not',
  'propertyNames',
  'if',
  'then',
  'else',
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
  'contentSchema',
];
const schemaArrays = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const schemaMaps = ['properties', 'patternProperties', 'dependentSchemas', 'dependencies', '$defs', 'definitions'];

/** The Inspector's findings for one schema: type arrays, remote $refs, schemas that constrain nothing, bare booleans. */
function inspectorFindings(node: unknown, path: string, keyword?: string): string[] {
  if (typeof node === 'boolean') return keyword && booleanValued.has(keyword) ? [] : [`${path}: bare ${node}`];
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return [];
  const schema = node as Record<string, any>;
  const findings: string[] = [];
  if (Array.isArray(schema.type)) findings.push(`${path}: type array`);
  if (typeof schema.$ref === 'string' && !schema.$ref.startsWith('#')) findings.push(`${path}: remote $ref`);
  const constrains = Object.keys(schema).some((key) => constraining.has(key)) || ('if' in schema && ('then' in schema || 'else' in schema));
  if (!constrains && keyword !== 'not') findings.push(`${path}: constrains nothing`);
  for (const key of schemaMaps)
    for (const [name, sub] of Object.entries(schema[key] ?? {})) findings.push(...inspectorFindings(sub, `${path}.${key}.${name}`, key));
  for (const key of schemaArrays)
    for (const [index, sub] of ((schema[key] ?? []) as unknown[]).entries()) findings.push(...inspectorFindings(sub, `${path}.${key}[${index}]`, key));
  for (const key of schemaKeywords) {
    if (!(key in schema)) continue;
    if (key === 'items' && Array.isArray(schema.items))
      schema.items.forEach((sub: unknown, index: number) => findings.push(...inspectorFindings(sub, `${path}.items[${index}]`, key)));
    else findings.push(...inspectorFindings(schema[key], `${path}.${key}`, key));
  }
  return findings;
}

describe('MCP tools: the listing', () => {
  it('gives every tool a title, a description, the four hints, an object outputSchema, and input schemas without unions', () => {
    expect(tools.map((tool) => tool.name).sort()).toEqual(mcpTools.map((tool) => tool.name).sort());
    for (const tool of tools) {
      const declared = mcpTools.find((candidate) => candidate.name === tool.name)!;
      expect(tool.title, tool.name).toMatch(/^[A-Z]/);
      expect(tool.description!.length, tool.name).toBeGreaterThan(80);
      const hints = tool.annotations!;
      for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const)
        expect(typeof hints[hint], `${tool.name} ${hint}`).toBe('boolean');
      // The rule (docs/mcp.md "Annotations"): read-only exactly when it does not write; a read destroys nothing; nothing reaches outside.
      expect(hints.readOnlyHint, tool.name).toBe(!declared.writes);
      if (hints.readOnlyHint) expect(hints, tool.name).toMatchObject({ destructiveHint: false, idempotentHint: true });
      expect(hints.openWorldHint, tool.name).toBe(false);
      expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object' });
      expect(tool.outputSchema, tool.name).not.toHaveProperty('$schema');
      expect(JSON.stringify(tool.outputSchema), tool.name).not.toContain('$ref');
      expect(tool.inputSchema, tool.name).toMatchObject({ type: 'object', additionalProperties: false });
      expect(unionsIn(tool.inputSchema), tool.name).toEqual([]);
    }
  });

  it("passes the MCP Inspector CLI's schema check (--strict) for every tool: no finding in any input or output schema", () => {
    const findings = tools.flatMap((tool) => [
      ...inspectorFindings(tool.inputSchema, `${tool.name} inputSchema`),
      ...(tool.outputSchema ? inspectorFindings(tool.outputSchema, `${tool.name} outputSchema`) : []),
    ]);
    expect(findings).toEqual([]);
    // The check finds what the Inspector found before (0 errors, 16 warnings): an amount's type array, zod's `{}` for any value.
    const before = { type: 'object', properties: { max_price: { type: ['string', 'number'] }, input: { type: 'object', additionalProperties: {} } } };
    expect(inspectorFindings(before, 'before')).toEqual([
      'before.properties.max_price: type array',
      'before.properties.input.additionalProperties: constrains nothing',
    ]);
  });

  it('publishes amounts as decimal strings and numbers as numbers', () => {
    const property = (tool: string, name: string) => (tools.find((candidate) => candidate.name === tool)!.inputSchema.properties as Record<string, any>)[name];
    for (const [tool, name] of [
      ['buy_capability', 'max_price'],
      ['create_demand', 'max_price_ut'],
      ['publish_task', 'bounty_amount'],
      ['accept_application', 'max_price'],
      ['search_tasks', 'min_bounty'],
      ['update_skill', 'ut_price'],
    ]) {
      expect(property(tool!, name!), `${tool} ${name}`).toMatchObject({ type: 'string', pattern: '^\\d+(\\.\\d{1,2})?$' });
    }
    for (const [tool, name] of [
      ['search_capabilities', 'page_size'],
      ['match_capabilities', 'top_k'],
      ['buy_capability', 'booked_hours'],
      ['create_skill', 'min_duration'],
    ]) {
      expect(property(tool!, name!).type, `${tool} ${name}`).toBe('integer');
    }
    expect(property('update_skill', 'clear')).toMatchObject({ type: 'array', items: { enum: ['city', 'ut_price', 'min_duration', 'max_duration'] } });
  });

  it('says which tools spend money, and those take a price ceiling and an idempotency key', () => {
    // confirm_transaction pays what was frozen when buying: the transaction's price is its ceiling (docs/mcp.md "Tools that spend money").
    const ceilings: Record<string, string | null> = {
      buy_capability: 'max_price',
      create_demand: 'max_price_ut',
      publish_task: 'bounty_amount',
      accept_application: 'max_price',
      confirm_transaction: null,
    };
    const spending = tools
      .filter((tool) => /(^| )SPENDS MONEY/.test(tool.description!))
      .map((tool) => tool.name)
      .sort();
    expect(spending).toEqual(Object.keys(ceilings).sort());
    for (const [name, ceiling] of Object.entries(ceilings)) {
      const tool = tools.find((candidate) => candidate.name === name)!;
      expect(Object.keys(tool.inputSchema.properties!), name).toEqual(expect.arrayContaining(['idempotency_key', ...(ceiling ? [ceiling] : [])]));
      expect(tool.annotations, name).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    }
  });
});

describe('MCP tools: answers', () => {
  it('every tool answers structuredContent that matches its outputSchema (checked by the SDK client and by Ajv, with no undeclared field)', async () => {
    const { buyer: buyerActor, seller: sellerActor, capability } = await agentMarket(test, '200.00');
    await credit(test, sellerActor.userId, '5.00');
    const [buyer, seller] = [await clientOf(buyerActor), await clientOf(sellerActor)];
    const word = `kestrel${randomUUID().slice(0, 6)}`;

    // The capability market.
    await succeed(buyer, 'get_capability', { cap_id: capability.id });
    await succeed(buyer, 'search_capabilities', { owner: sellerActor.userId, max_price_ut: '50', page_size: 5 });
    const demand = (await succeed(buyer, 'create_demand', { description: 'Summarize a PDF report', max_price_ut: '20.00', tags: ['pdf'] })).demand;
    await succeed(buyer, 'match_capabilities', { demand_id: demand.id, top_k: 3 });
    const bought = await succeed(buyer, 'buy_capability', {
      capability_id: capability.id,
      demand_id: demand.id,
      max_price: '10.00',
      input: { pages: 3, url: 'https://example.com/a.pdf' },
      note: 'brief',
    });
    await succeed(seller, 'get_transaction', { tx_id: bought.transaction.id });
    await succeed(buyer, 'get_wallet');
    // A demand bought at once by auto_accept answers its transaction too.
    await succeed(buyer, 'create_demand', { description: 'Summarize a PDF', max_price_ut: '10.00', auto_accept: true });

    // Skills.
    const skill = (
      await succeed(seller, 'create_skill', {
        name: `${word} surveys`,
        description: 'Counting birds',
        category: 'data',
        ut_price: '7.50',
        mode: 'offline',
        city: 'Lyon',
        min_duration: 2,
      })
    ).skill;
    await succeed(buyer, 'search_skills', { q: word });
    await succeed(buyer, 'get_skill', { skill_id: skill.id });
    await succeed(seller, 'list_my_skills', { status: 'active' });
    const updated = await succeed(seller, 'update_skill', { skill_id: skill.id, mode: 'online', clear: ['city', 'ut_price', 'min_duration'] });
    expect(updated).toMatchObject({ mode: 'online', city: null, ut_price: null, min_duration: null });

    // Tasks: publish, apply, accept, and the transaction to its end.
    const task = (
      await succeed(buyer, 'publish_task', {
        title: `Count ${word} nests`,
        description: 'From drone photos',
        mode: 'online',
        category: 'data',
        bounty_amount: '20.00',
      })
    ).task;
    await succeed(seller, 'search_tasks', { q: word, max_bounty: '100' });
    const application = (await succeed(seller, 'apply_to_task', { task_id: task.id, skill_id: skill.id, proposed_price: '18.00', message: 'Happy to' }))
      .application;
    // The publisher finds it over MCP alone, to accept it.
    const listed = await succeed(buyer, 'list_task_applications', { task_id: task.id, status: 'pending' });
    expect(listed.items.map((item: { id: string }) => item.id)).toEqual([application.id]);
    const accepted = (await succeed(buyer, 'accept_application', { task_id: task.id, app_id: application.id, max_price: '18.00' })).accepted;
    const transactionId = accepted.transaction.id as string;
    await succeed(seller, 'accept_transaction', { tx_id: transactionId });
    await succeed(seller, 'deliver_transaction', { tx_id: transactionId, result_payload: { nests: 12, notes: ['north side'] } });
    await succeed(buyer, 'confirm_transaction', { tx_id: transactionId });
    await succeed(seller, 'delete_skill', { skill_id: skill.id });

    // A human's answers are in the other currency, with the same schemas.
    await succeed(await clientOf(await signUpHuman(test)), 'get_wallet');
    expect([...exercised].sort()).toEqual(mcpTools.map((tool) => tool.name).sort());
  });

  it('a refusal is a tool error with the envelope as text and no structuredContent, which the SDK client passes through', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const client = await clientOf(buyer);
    const refused = await fail(client, 'buy_capability', { capability_id: capability.id, max_price: '9.99' });
    expect(refused).toMatchObject({ code: 4093, message: 'price_above_ceiling' });
    expect((await succeed(client, 'get_wallet')).ut).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect(await fail(client, 'get_transaction', { tx_id: randomUUID() })).toMatchObject({ code: 4040 });
  });
});

describe('MCP tools: arguments', () => {
  /** Arguments each tool would accept, so that the unknown one is the only problem. */
  const validArguments = (ids: Record<string, string>): Record<string, Record<string, unknown>> => ({
    get_capability: { cap_id: ids.id },
    buy_capability: { capability_id: ids.id },
    search_capabilities: {},
    match_capabilities: { demand_id: ids.id },
    create_demand: { description: 'x' },
    get_transaction: { tx_id: ids.id },
    get_wallet: {},
    search_skills: {},
    get_skill: { skill_id: ids.id },
    create_skill: { name: 'x', description: 'y', category: 'other' },
    list_my_skills: {},
    update_skill: { skill_id: ids.id, name: 'x' },
    delete_skill: { skill_id: ids.id },
    search_tasks: {},
    publish_task: { title: 'x', description: 'y', mode: 'online' },
    apply_to_task: { task_id: ids.id, skill_id: ids.id },
    accept_application: { task_id: ids.id, app_id: ids.id },
    list_task_applications: { task_id: ids.id },
    accept_transaction: { tx_id: ids.id },
    deliver_transaction: { tx_id: ids.id, result_payload: {} },
    confirm_transaction: { tx_id: ids.id },
  });

  it('every tool refuses an argument it does not know with 4000 naming it, and does nothing', async () => {
    const actor = await createAgent(test);
    await credit(test, actor.userId, '50.00');
    const client = await clientOf(actor);
    const table = validArguments({ id: randomUUID() });
    expect(Object.keys(table).sort()).toEqual(mcpTools.map((tool) => tool.name).sort());
    for (const [name, args] of Object.entries(table)) {
      const refused = await fail(client, name, { ...args, surprise_field: 1 });
      expect(refused, name).toMatchObject({ code: 4000, message: 'validation_error' });
      expect(refused.data.errors, name).toEqual([{ path: 'arguments', message: expect.stringContaining('surprise_field') }]);
    }
    expect((await succeed(client, 'get_wallet')).ut).toMatchObject({ available: '50.00', frozen: '0.00' });
    expect((await succeed(client, 'list_my_skills')).total).toBe(0);
  });

  it('arguments that are not an object are a JSON-RPC error -32602 with one short sentence', async () => {
    const actor = await createAgent(test);
    for (const args of [5, 'text', [1, 2], null, true]) {
      for (const name of ['get_wallet', 'buy_capability']) {
        const answer = await rpc(actor, 'tools/call', { name, arguments: args });
        expect(answer.error, `${name} ${JSON.stringify(args)}`).toEqual({ code: -32602, message: 'invalid params: params.arguments must be an object' });
      }
    }
    expect((await rpc(actor, 'tools/call', { arguments: {} })).error).toEqual({ code: -32602, message: 'invalid params: params.name must be a string' });
    expect((await rpc(actor, 'resources/read', { uri: 5 })).error).toEqual({ code: -32602, message: 'invalid params: params.uri must be a string' });
  });

  it('a protocol error reaches the SDK client with its code said once', async () => {
    const client = await clientOf(await createAgent(test));
    const messageOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'no error',
        (error: unknown) => (error instanceof McpError ? error.message : String(error)),
      );
    expect(await messageOf(client.callTool({ name: 'no_such_tool', arguments: {} }))).toBe('MCP error -32602: unknown tool: no_such_tool');
    expect(await messageOf(client.callTool({ name: 'get_wallet', arguments: 5 as never }))).toBe(
      'MCP error -32602: invalid params: params.arguments must be an object',
    );
    expect(await messageOf(client.readResource({ uri: 'marketplace://nothing' }))).toBe('MCP error -32002: unknown resource: marketplace://nothing');
    expect(await messageOf(client.getPrompt({ name: 'no_such_prompt' }))).toBe('MCP error -32602: unknown prompt: no_such_prompt');
  });

  it("update_skill clears with `clear` (published) or null (REST's way, still parsed), not both with a value", async () => {
    const client = await clientOf(await createAgent(test));
    const skill = (
      await succeed(client, 'create_skill', { name: 'Maps', description: 'Maps of places', category: 'design', ut_price: '3.00', max_duration: 5 })
    ).skill;
    expect(await succeed(client, 'update_skill', { skill_id: skill.id, clear: ['max_duration'] })).toMatchObject({ max_duration: null, ut_price: '3.00' });
    expect(await succeed(client, 'update_skill', { skill_id: skill.id, ut_price: null })).toMatchObject({ ut_price: null });
    const both = await fail(client, 'update_skill', { skill_id: skill.id, ut_price: '4.00', clear: ['ut_price'] });
    expect(both.data.errors).toEqual([{ path: 'arguments.clear.0', message: 'ut_price is both given and cleared' }]);
    expect((await fail(client, 'update_skill', { skill_id: skill.id })).data.errors).toEqual([
      { path: 'arguments', message: 'name at least one field to change' },
    ]);
  });

  it('an amount may still be a JSON number, parsed as REST parses it', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const client = await clientOf(buyer);
    expect((await fail(client, 'buy_capability', { capability_id: capability.id, max_price: 9.5 })).code).toBe(4093);
    expect((await succeed(client, 'buy_capability', { capability_id: capability.id, max_price: 10 })).transaction.price_ut).toBe('10.00');
    expect((await fail(client, 'buy_capability', { capability_id: capability.id, max_price: '10.001' })).data.errors?.[0]?.path).toBe('arguments.max_price');
  });
});

describe('MCP resources: the wallet and the open transactions', () => {
  async function read(client: Client, uri: string) {
    const { contents } = await client.readResource({ uri });
    expect(contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
    return JSON.parse((contents[0] as { text: string }).text) as Record<string, any>;
  }

  it("marketplace://wallet is the caller's wallet, as get_wallet answers it", async () => {
    const { buyer, capability } = await agentMarket(test, '30.00');
    const client = await clientOf(buyer);
    await succeed(client, 'buy_capability', { capability_id: capability.id });
    const wallet = await read(client, 'marketplace://wallet');
    expect(wallet.ut).toMatchObject({ available: '20.00', frozen: '10.00', total: '30.00', currency: 'UT' });
    expect(wallet).toEqual(await succeed(client, 'get_wallet'));
    // Someone else reads their own wallet, never this one.
    expect((await read(await clientOf(await createAgent(test)), 'marketplace://wallet')).ut).toMatchObject({ available: '0.00', frozen: '0.00' });
  });

  it("marketplace://transactions/open lists the caller's unfinished transactions as buyer or seller, newest first, bounded; never another user's", async () => {
    const { buyer, seller, capability } = await agentMarket(test, '500.00');
    const [buyerClient, sellerClient] = [await clientOf(buyer), await clientOf(seller)];
    const ids: string[] = [];
    for (let index = 0; index < 22; index += 1) ids.push((await succeed(buyerClient, 'buy_capability', { capability_id: capability.id })).transaction.id);
    // One of them finished (the seller refused it): no longer open.
    await test.http.post(`/api/v1/transactions/${ids[0]}/reject`).set(seller.headers).expect(200);

    const open = await read(buyerClient, 'marketplace://transactions/open');
    expect(open).toMatchObject({ total: 21, shown: 20, has_more: true, statuses: ['pending_freeze', 'frozen', 'accepted', 'delivered', 'disputed'] });
    expect(open.items.map((item: { id: string }) => item.id)).toEqual(ids.slice(2).reverse());
    expect(open.items[0]).toEqual(await succeed(buyerClient, 'get_transaction', { tx_id: ids[21] }));
    // The seller sees the same transactions, as the seller.
    expect((await read(sellerClient, 'marketplace://transactions/open')).total).toBe(21);
    // A stranger, and the same user's counterpart in the other space, see none of them.
    expect(await read(await clientOf(await createAgent(test)), 'marketplace://transactions/open')).toMatchObject({ total: 0, items: [] });
    expect((await read(await clientOf(await signUpHuman(test)), 'marketplace://transactions/open')).total).toBe(0);
  });
});

describe('MCP prompts', () => {
  it('lists the two journeys with their arguments', async () => {
    const client = await clientOf(await createAgent(test));
    expect(client.getServerCapabilities()?.prompts).toBeDefined();
    const { prompts } = await client.listPrompts();
    expect(prompts.map((prompt) => prompt.name)).toEqual(['find_and_buy_capability', 'publish_task']);
    for (const prompt of prompts) {
      expect(prompt.title && prompt.description, prompt.name).toBeTruthy();
      expect(
        prompt.arguments!.filter((argument) => argument.required).map((argument) => argument.name),
        prompt.name,
      ).toEqual(['job']);
    }
  });

  it('expands a prompt with its arguments into steps that name the tools, and refuses a missing or unknown argument', async () => {
    const client = await clientOf(await createAgent(test));
    const buying = await client.getPrompt({ name: 'find_and_buy_capability', arguments: { job: 'Translate my contract into Chinese', budget: '25.00' } });
    const text = (buying.messages[0]!.content as { text: string }).text;
    expect(buying.messages[0]!.role).toBe('user');
    expect(text).toContain('Translate my contract into Chinese');
    for (const step of [
      'create_demand',
      'max_price_ut = "25.00"',
      'match_capabilities',
      'buy_capability',
      'max_price',
      'idempotency_key',
      'confirm_transaction',
    ])
      expect(text).toContain(step);

    const publishing = await client.getPrompt({ name: 'publish_task', arguments: { job: 'Photograph a wedding', bounty: '300', city: 'Lyon' } });
    const task = (publishing.messages[0]!.content as { text: string }).text;
    for (const step of ['Photograph a wedding', 'publish_task', 'bounty_amount = "300"', 'city "Lyon"', 'get_wallet', 'accept_application'])
      expect(task).toContain(step);

    const messageOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'no error',
        (error: unknown) => (error as Error).message,
      );
    expect(await messageOf(client.getPrompt({ name: 'publish_task', arguments: {} }))).toBe('MCP error -32602: missing argument of prompt publish_task: job');
    expect(await messageOf(client.getPrompt({ name: 'publish_task', arguments: { job: 'x', price: '3' } }))).toBe(
      'MCP error -32602: unknown argument of prompt publish_task: price',
    );
  });
});
