import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { agentMarket, balance, createCapability, credit, humanMarket } from '../helpers/market.ts';
import { callTool, connectMcp, expectSameAsRest } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';
import { limits } from '../../src/limits.ts';

let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const clients: Client[] = [];

beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.close();
  await test?.close();
});

async function clientOf(actor: Actor) {
  const client = await connectMcp(server.url, actor.headers);
  clients.push(client);
  return client;
}

async function categoryCounts(client: Client): Promise<Record<string, number>> {
  const result = await client.readResource({ uri: 'marketplace://categories' });
  const [content] = result.contents;
  expect(content?.mimeType).toBe('application/json');
  const body = JSON.parse((content as { text: string }).text) as {
    categories: { code: string; label: string; icon: string; description: string; capability_count: number }[];
  };
  expect(body.categories).toHaveLength(22);
  for (const category of body.categories) expect(category.label && category.icon && category.description).toBeTruthy();
  return Object.fromEntries(body.categories.map((category) => [category.code, category.capability_count]));
}

/** The connection attempt's HTTP failure: the status and the envelope the server answered with. */
async function refusal(headers: Record<string, string>) {
  const error = await connectMcp(server.url, headers).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(StreamableHTTPError);
  // The body is a JSON-RPC error response whose data is the marketplace envelope.
  const body = JSON.parse((error as Error).message.slice((error as Error).message.indexOf('{'))) as { jsonrpc: string; error: { data: { code: number } } };
  expect(body.jsonrpc).toBe('2.0');
  return { status: (error as StreamableHTTPError).code, code: body.error.data.code };
}

describe('MCP: the categories resource', () => {
  it("is listed under the marketplace:// scheme and counts the available capabilities of the caller's space only", async () => {
    const agentSeller = await createAgent(test);
    const humanSeller = await signUpHuman(test);
    const agent = await clientOf(await createAgent(test));
    const human = await clientOf(await signUpHuman(test));

    const { resources } = await agent.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(['marketplace://categories', 'marketplace://wallet', 'marketplace://transactions/open']);
    const agentBefore = await categoryCounts(agent);
    const humanBefore = await categoryCounts(human);

    await createCapability(test, agentSeller, { category: 'translation' });
    await createCapability(test, agentSeller, { category: 'translation' });
    const withdrawn = await createCapability(test, agentSeller, { category: 'translation' });
    await createCapability(test, agentSeller, { category: 'design' });
    await createCapability(test, humanSeller, { category: 'translation' });
    // No route deletes a capability on this branch yet (DELETE comes with the caps work): do what its soft delete does.
    await test.runtime.engine.dependencies.db('capabilities').where({ id: withdrawn.id }).update({ available: false, deleted_at: new Date() });

    const agentAfter = await categoryCounts(agent);
    const humanAfter = await categoryCounts(human);
    expect(agentAfter.translation! - agentBefore.translation!).toBe(2);
    expect(agentAfter.design! - agentBefore.design!).toBe(1);
    expect(humanAfter.translation! - humanBefore.translation!).toBe(1);
    expect(humanAfter.design).toBe(humanBefore.design);
  });

  it('answers an unknown resource with a protocol error', async () => {
    const agent = await clientOf(await createAgent(test));
    await expect(agent.readResource({ uri: 'marketplace://nothing' })).rejects.toBeInstanceOf(McpError);
  });
});

describe('MCP: tools', () => {
  it('lists every tool with an object input schema generated from the shared zod schemas', async () => {
    const agent = await clientOf(await createAgent(test));
    const { tools } = await agent.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      'accept_application',
      'accept_transaction',
      'apply_to_task',
      'buy_capability',
      'confirm_transaction',
      'create_demand',
      'create_skill',
      'delete_skill',
      'deliver_transaction',
      'get_capability',
      'get_skill',
      'get_transaction',
      'get_wallet',
      'list_my_skills',
      'list_task_applications',
      'match_capabilities',
      'publish_task',
      'search_capabilities',
      'search_skills',
      'search_tasks',
      'update_skill',
    ]);
    const buy = tools.find((tool) => tool.name === 'buy_capability')!;
    expect(buy.inputSchema).toMatchObject({ type: 'object', required: ['capability_id'], additionalProperties: false });
    expect(buy.inputSchema.properties).toMatchObject({ idempotency_key: { maxLength: 64 }, booked_hours: { minimum: 1 }, note: { maxLength: 4000 } });
    expect(buy.description).toMatch(/idempotency_key/);
    // The same zod schema as the REST body: the same properties as the OpenAPI document's, without its unions.
    const document = await test.http.get('/api/v1/public/openapi.json').expect(200);
    expectSameAsRest(buy.inputSchema.properties as Record<string, any>, document.body.components.schemas.TransactionCreate.properties);
    expect(tools.find((tool) => tool.name === 'get_transaction')!.inputSchema).toMatchObject({ type: 'object', required: ['tx_id'] });
  });

  it("buy_capability creates and freezes: the buyer's wallet shows the hold, get_transaction and get_wallet read it", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const client = await clientOf(buyer);
    const key = randomUUID();

    const bought = await callTool(client, 'buy_capability', { capability_id: capability.id, note: 'please summarise', idempotency_key: key });
    expect(bought.isError, JSON.stringify(bought.data)).toBe(false);
    expect(bought.data.idempotency_key).toBe(key);
    expect(bought.data.transaction).toMatchObject({
      capability_id: capability.id,
      buyer_user_id: buyer.userId,
      seller_user_id: seller.userId,
      status: 'frozen',
      price_ut: '10.00',
    });
    expect(await balance(test, buyer)).toMatchObject({ available: '90.00', frozen: '10.00', total: '100.00' });

    // The same key again is the same purchase: nothing more is frozen.
    const again = await callTool(client, 'buy_capability', { capability_id: capability.id, note: 'please summarise', idempotency_key: key });
    expect(again.data.transaction.id).toBe(bought.data.transaction.id);
    expect(await balance(test, buyer)).toMatchObject({ available: '90.00', frozen: '10.00' });

    const read = await callTool(client, 'get_transaction', { tx_id: bought.data.transaction.id });
    expect(read).toMatchObject({ isError: false, data: { id: bought.data.transaction.id, status: 'frozen', note: 'please summarise' } });
    const wallet = await callTool(client, 'get_wallet');
    expect(wallet.data.ut).toMatchObject({ available: '90.00', frozen: '10.00' });

    // The seller is a party too; the REST view of the transaction is the same.
    const sellerView = await callTool(await clientOf(seller), 'get_transaction', { tx_id: bought.data.transaction.id });
    expect(sellerView.data.status).toBe('frozen');
    const rest = await test.http.get(`/api/v1/transactions/${bought.data.transaction.id}`).set(buyer.headers).expect(200);
    expect(rest.body.data).toEqual(read.data);
  });

  it('buy_capability without a key generates one, so each call is a new purchase; get_capability reads the capability', async () => {
    const { buyer, capability } = await agentMarket(test);
    const client = await clientOf(buyer);
    const first = await callTool(client, 'buy_capability', { capability_id: capability.id });
    const second = await callTool(client, 'buy_capability', { capability_id: capability.id });
    expect(first.data.idempotency_key).toEqual(expect.any(String));
    expect(second.data.transaction.id).not.toBe(first.data.transaction.id);
    expect(await balance(test, buyer)).toMatchObject({ available: '80.00', frozen: '20.00' });
    expect(await callTool(client, 'get_capability', { cap_id: capability.id })).toMatchObject({
      isError: false,
      data: { id: capability.id, price_ut: '10.00' },
    });
  });

  it('works for a human with a bearer token, in the human space and its currency', async () => {
    const { buyer, capability } = await humanMarket(test);
    const bought = await callTool(await clientOf(buyer), 'buy_capability', { capability_id: capability.id });
    expect(bought.data.transaction).toMatchObject({ status: 'frozen', currency: 'CNY' });
    expect(await balance(test, buyer, 'cash')).toMatchObject({ available: '90.00', frozen: '10.00' });
  });
});

describe('MCP: failures', () => {
  it('refuses a request without credentials (401, 4010), with bad key headers (403, 4012: not a sign-in challenge) and with mixed credentials (400, 4011)', async () => {
    expect(await refusal({})).toEqual({ status: 401, code: 4010 });
    const agent = await createAgent(test);
    expect(await refusal({ 'X-Api-Key': 'not-a-key', 'X-Platform-User-Id': agent.userId })).toEqual({ status: 403, code: 4012 });
    expect(await refusal({ ...agent.headers, Authorization: 'Bearer whatever' })).toEqual({ status: 400, code: 4011 });
  });

  it('answers a refusal with a JSON-RPC error response under its HTTP status, which clients that read only that (the Python SDK) show', async () => {
    const agent = await createAgent(test);
    const initialize = {
      jsonrpc: '2.0',
      id: 7,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const post = (headers: Record<string, string>) => test.http.post('/mcp').set(headers).set('Accept', 'application/json, text/event-stream').send(initialize);
    const unknownKey = await post({ 'X-Api-Key': 'mk_not_a_key', 'X-Platform-User-Id': agent.userId }).expect(403);
    expect(unknownKey.headers['content-type']).toMatch(/^application\/json/);
    expect(unknownKey.body).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32112,
        message: expect.stringContaining('unknown API key'),
        data: { code: 4012, message: 'credentials_rejected', data: expect.anything() },
      },
    });
    const anonymous = await post({}).expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Bearer resource_metadata=/);
    expect(anonymous.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32110, data: { code: 4010 } } });
    const mixed = await post({ ...agent.headers, Authorization: 'Bearer whatever' }).expect(400);
    expect(mixed.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { data: { code: 4011 } } });
  });

  it('answers GET and DELETE on /mcp with 405 (stateless: no stream, no session)', async () => {
    const agent = await createAgent(test);
    for (const method of ['get', 'delete'] as const) {
      const response = await test.http[method]('/mcp').set(agent.headers).set('Accept', 'text/event-stream');
      expect(response.status).toBe(405);
      expect(response.headers.allow).toBe('POST');
    }
  });

  it('refuses a body that is not one JSON object (a JSON-RPC batch) or not JSON with 4001 as a JSON-RPC error, and is in the OpenAPI document', async () => {
    const agent = await createAgent(test);
    const batch = await test.http
      .post('/mcp')
      .set(agent.headers)
      .set('Accept', 'application/json, text/event-stream')
      .send([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]);
    expect(batch.status).toBe(400);
    expect(batch.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: { code: 4001, message: 'invalid_json' } } });
    const broken = await test.http
      .post('/mcp')
      .set(agent.headers)
      .set('Accept', 'application/json, text/event-stream')
      .set('Content-Type', 'application/json')
      .send('{"jsonrpc": "2.0", "id": 1,');
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, data: { code: 4001 } } });
    const huge = await test.http
      .post('/mcp')
      .set(agent.headers)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { padding: 'x'.repeat(limits.requestBodyBytesMax) } });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 4130, message: 'payload_too_large' } } });
    const document = await test.http.get('/api/v1/public/openapi.json').expect(200);
    expect(document.body.paths['/mcp'].post.tags).toEqual(['mcp']);
  });

  it('insufficient balance is a tool error 4020 naming the pending transaction; the same key freezes it after a top-up', async () => {
    const { buyer, capability } = await agentMarket(test, '0');
    const client = await clientOf(buyer);
    const key = randomUUID();
    const refused = await callTool(client, 'buy_capability', { capability_id: capability.id, idempotency_key: key });
    expect(refused.isError).toBe(true);
    expect(refused.data).toMatchObject({ code: 4020, message: 'insufficient_balance', data: { status: 'pending_freeze', idempotency_key: key } });
    await credit(test, buyer.userId, '10.00');
    const retried = await callTool(client, 'buy_capability', { capability_id: capability.id, idempotency_key: key });
    expect(retried.data.transaction).toMatchObject({ id: refused.data.data.transaction_id, status: 'frozen' });
    expect(await balance(test, buyer)).toMatchObject({ available: '0.00', frozen: '10.00' });
  });

  it("hides another user's transaction and the other space's capability (4040) and refuses buying one's own (4030)", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const bought = await callTool(await clientOf(buyer), 'buy_capability', { capability_id: capability.id });
    const stranger = await clientOf(await createAgent(test));
    expect(await callTool(stranger, 'get_transaction', { tx_id: bought.data.transaction.id })).toMatchObject({ isError: true, data: { code: 4040 } });
    const human = await clientOf(await signUpHuman(test));
    expect(await callTool(human, 'get_capability', { cap_id: capability.id })).toMatchObject({ isError: true, data: { code: 4040 } });
    expect(await callTool(human, 'buy_capability', { capability_id: capability.id })).toMatchObject({ isError: true, data: { code: 4040 } });
    expect(await callTool(await clientOf(seller), 'buy_capability', { capability_id: capability.id })).toMatchObject({ isError: true, data: { code: 4030 } });
  });

  it('invalid arguments are a tool error 4000 naming each bad argument', async () => {
    const client = await clientOf(await createAgent(test));
    const cases: [string, Record<string, unknown>, string][] = [
      ['buy_capability', { capability_id: 'not-a-uuid' }, 'arguments.capability_id'],
      ['buy_capability', {}, 'arguments.capability_id'],
      ['buy_capability', { capability_id: randomUUID(), idempotency_key: 'k'.repeat(65) }, 'arguments.idempotency_key'],
      ['buy_capability', { capability_id: randomUUID(), booked_hours: 0 }, 'arguments.booked_hours'],
      ['buy_capability', { capability_id: randomUUID(), surprise: true }, 'arguments'],
      ['get_transaction', { tx_id: 42 }, 'arguments.tx_id'],
      ['get_wallet', { currency: 'UT' }, 'arguments'],
    ];
    for (const [name, args, path] of cases) {
      const outcome = await callTool(client, name, args);
      expect(outcome, `${name} ${JSON.stringify(args)}`).toMatchObject({ isError: true, data: { code: 4000, message: 'validation_error' } });
      expect(outcome.data.data.errors.map((error: { path: string }) => error.path)).toContain(path);
    }
  });

  it('an unknown tool is a protocol error, not a tool result', async () => {
    const client = await clientOf(await createAgent(test));
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toBeInstanceOf(McpError);
  });
});

describe('MCP: rate limits', () => {
  let limited: TestApp;
  let limitedServer: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    limited = await startTestApp({ RATE_LIMIT_WRITES_PER_CREDENTIAL: '1/3600' });
    limitedServer = await listen(limited);
  });
  afterAll(async () => {
    await limitedServer?.close();
    await limited?.close();
  });

  it('a tool call that buys takes from the write buckets (429, 4290 with Retry-After); reads keep working', async () => {
    const buyer = await createAgent(limited);
    const seller = await createAgent(limited);
    await credit(limited, buyer.userId, '100.00');
    const capability = await createCapability(limited, seller);
    const client = await connectMcp(limitedServer.url, buyer.headers);
    try {
      expect((await callTool(client, 'buy_capability', { capability_id: capability.id })).isError).toBe(false);
      const error = await callTool(client, 'buy_capability', { capability_id: capability.id }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(StreamableHTTPError);
      expect((error as StreamableHTTPError).code).toBe(429);
      expect((error as Error).message).toContain('4290');
      const raw = await limited.http
        .post('/mcp')
        .set(buyer.headers)
        .set('Accept', 'application/json, text/event-stream')
        .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'buy_capability', arguments: { capability_id: capability.id } } });
      expect(raw.status).toBe(429);
      expect(Number(raw.headers['retry-after'])).toBeGreaterThan(0);
      expect((await callTool(client, 'get_wallet')).data.ut).toMatchObject({ frozen: '10.00' });
    } finally {
      await client.close();
    }
  });
});
