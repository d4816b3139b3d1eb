import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp, expectSameAsRest } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * The MCP tools of the market side: search_capabilities, match_capabilities and create_demand,
 * through the official SDK client, against capabilities and demands made over REST.
 */
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

const ids = (items: { id: string }[]) => items.map((item) => item.id).sort();
const expectSuccess = (outcome: { isError: boolean; data: unknown }) => expect(outcome.isError, JSON.stringify(outcome.data)).toBe(false);

describe('MCP: search_capabilities', () => {
  it("finds by text and category only in the caller's space, filters by price and owner, and pages with numbers", async () => {
    const agentSeller = await createAgent(test);
    const humanSeller = await signUpHuman(test);
    const word = `walrus${randomUUID().slice(0, 8)}`;
    const tagged = { title: `Tidewater ${word} survey`, description: 'Counts animals on a beach from drone photos' };
    const cheap = await createCapability(test, agentSeller, { ...tagged, category: 'data', price_ut: '5.00' });
    const dear = await createCapability(test, agentSeller, { ...tagged, category: 'data', price_ut: '50.00' });
    const design = await createCapability(test, agentSeller, { ...tagged, category: 'design' });
    const human = await createCapability(test, humanSeller, { ...tagged, category: 'data' });

    const agent = await clientOf(await createAgent(test));
    const byWord = await callTool(agent, 'search_capabilities', { q: word });
    expectSuccess(byWord);
    expect(ids(byWord.data.items)).toEqual([cheap.id, dear.id, design.id].sort());
    expect(byWord.data).toMatchObject({ total: 3, page: 1, page_size: 20, has_more: false });
    const inCategory = await callTool(agent, 'search_capabilities', { q: word.toUpperCase(), category: 'data' });
    expect(ids(inCategory.data.items)).toEqual([cheap.id, dear.id].sort());
    const withinBudget = await callTool(agent, 'search_capabilities', { q: word, category: 'data', max_price_ut: 10 });
    expect(ids(withinBudget.data.items)).toEqual([cheap.id]);
    const byOwner = await callTool(agent, 'search_capabilities', { owner: agentSeller.userId, min_price_ut: '50.00' });
    expect(ids(byOwner.data.items)).toEqual([dear.id]);

    // Paging with JSON numbers, then with the cursor of the first page: the same three, no repeat.
    const first = await callTool(agent, 'search_capabilities', { q: word, page_size: 2 });
    expect(first.data).toMatchObject({ page_size: 2, has_more: true, total: 3 });
    const second = await callTool(agent, 'search_capabilities', { q: word, page: 2, page_size: 2 });
    const afterCursor = await callTool(agent, 'search_capabilities', { q: word, page_size: 2, cursor: first.data.next_cursor });
    expect(ids(second.data.items)).toEqual(ids(afterCursor.data.items));
    expect(ids([...first.data.items, ...second.data.items])).toEqual(byWord.data.items.map((item: { id: string }) => item.id).sort());

    // The human space sees only the human capability, and the REST list agrees with the tool.
    const person = await signUpHuman(test);
    const humanSearch = await callTool(await clientOf(person), 'search_capabilities', { q: word, category: 'data' });
    expect(ids(humanSearch.data.items)).toEqual([human.id]);
    const rest = await test.http.get('/api/v1/capabilities').query({ q: word, category: 'data' }).set(person.headers).expect(200);
    expect(rest.body.data).toEqual(humanSearch.data);
  });
});

describe('MCP: create_demand and match_capabilities', () => {
  it('creates a demand that REST lists, and matches it to the expected capability first, in its own space only', async () => {
    const seller = await createAgent(test);
    const humanSeller = await signUpHuman(test);
    const translation = await createCapability(test, seller, {
      title: 'English to Chinese contract translation',
      description: 'Translate legal contracts and agreements from English into Chinese',
      category: 'translation',
      price_ut: '20.00',
    });
    const general = await createCapability(test, await createAgent(test), {
      title: 'Chinese translation',
      description: 'Translate web pages into Chinese',
      category: 'translation',
      price_ut: '15.00',
    });
    await createCapability(test, seller, { title: 'Logo design', description: 'Original logo design for small shops', category: 'design' });
    const humanTranslation = await createCapability(test, humanSeller, {
      title: 'English to Chinese contract translation',
      description: 'Translate legal contracts and agreements from English into Chinese',
      category: 'translation',
    });

    const requester = await createAgent(test);
    const client = await clientOf(requester);
    const key = randomUUID();
    const created = await callTool(client, 'create_demand', {
      description: 'Translate my English sales contract into Chinese',
      max_price_ut: 25,
      idempotency_key: key,
    });
    expectSuccess(created);
    expect(created.data.idempotency_key).toBe(key);
    expect(created.data.demand).toMatchObject({
      user_id: requester.userId,
      owner_type: 'agent',
      status: 'open',
      max_price_ut: '25.00',
      currency: 'UT',
      auto_accept: false,
    });

    // The same key and arguments are the same demand; "25.00" is the same budget as 25.
    const again = await callTool(client, 'create_demand', {
      description: 'Translate my English sales contract into Chinese',
      max_price_ut: '25.00',
      idempotency_key: key,
    });
    expect(again.data.demand.id).toBe(created.data.demand.id);
    const changed = await callTool(client, 'create_demand', { description: 'Something else', idempotency_key: key });
    expect(changed).toMatchObject({ isError: true, data: { code: 4220 } });

    const listed = await test.http.get('/api/v1/demands').set(requester.headers).expect(200);
    expect(listed.body.data.items.map((demand: { id: string }) => demand.id)).toEqual([created.data.demand.id]);
    expect(listed.body.data.items[0]).toEqual(created.data.demand);

    const matched = await callTool(client, 'match_capabilities', { demand_id: created.data.demand.id });
    expectSuccess(matched);
    expect(matched.data.demand_id).toBe(created.data.demand.id);
    expect(matched.data.candidates[0]).toMatchObject({ entity_id: translation.id, price_ut: '20.00', category: 'translation', price_alignment: 1 });
    expect(matched.data.candidates.map((candidate: { entity_id: string }) => candidate.entity_id)).not.toContain(humanTranslation.id);
    expect(matched.data.candidates.map((candidate: { entity_id: string }) => candidate.entity_id)).toContain(general.id);
    const one = await callTool(client, 'match_capabilities', { demand_id: created.data.demand.id, top_k: 1 });
    expect(one.data.candidates.map((candidate: { entity_id: string }) => candidate.entity_id)).toEqual([translation.id]);
  });

  it("without a key each call is a new demand; a human's demand is in CNY and matches human capabilities", async () => {
    const requester = await createAgent(test);
    const client = await clientOf(requester);
    const first = await callTool(client, 'create_demand', { description: 'Proofread a short essay' });
    const second = await callTool(client, 'create_demand', { description: 'Proofread a short essay' });
    expect(first.data.idempotency_key).toEqual(expect.any(String));
    expect(second.data.demand.id).not.toBe(first.data.demand.id);

    const humanSeller = await signUpHuman(test);
    const offer = await createCapability(test, humanSeller, {
      title: 'Wedding photography',
      description: 'Photograph your wedding day, edited pictures delivered',
      category: 'photography',
    });
    const person = await clientOf(await signUpHuman(test));
    const demand = await callTool(person, 'create_demand', { description: 'Need a photographer for my wedding day', max_price_ut: '500' });
    expect(demand.data.demand).toMatchObject({ owner_type: 'human', currency: 'CNY', max_price_ut: '500.00' });
    const matched = await callTool(person, 'match_capabilities', { demand_id: demand.data.demand.id });
    expect(matched.data.candidates[0]?.entity_id).toBe(offer.id);
  });

  it("hides another user's cancelled demand and the other space's demand (4040); one's own cancelled demand is 4090", async () => {
    const owner = await createAgent(test);
    const cancelled = await createDemand(test, owner, { description: 'Clean a CSV file of customer addresses' });
    await test.http.post(`/api/v1/demands/${cancelled.id}/cancel`).set(owner.headers).expect(200);
    const humanDemand = await createDemand(test, await signUpHuman(test), { description: 'Clean a CSV file of customer addresses' });

    const stranger = await clientOf(await createAgent(test));
    expect(await callTool(stranger, 'match_capabilities', { demand_id: cancelled.id })).toMatchObject({ isError: true, data: { code: 4040 } });
    expect(await callTool(stranger, 'match_capabilities', { demand_id: humanDemand.id })).toMatchObject({ isError: true, data: { code: 4040 } });
    expect(await callTool(stranger, 'match_capabilities', { demand_id: randomUUID() })).toMatchObject({ isError: true, data: { code: 4040 } });
    expect(await callTool(await clientOf(owner), 'match_capabilities', { demand_id: cancelled.id })).toMatchObject({ isError: true, data: { code: 4090 } });
  });
});

describe('MCP: market tools refuse invalid arguments', () => {
  it('answers 4000 naming each bad argument', async () => {
    const client = await clientOf(await createAgent(test));
    const demandId = (await callTool(client, 'create_demand', { description: 'Anything at all' })).data.demand.id;
    const cases: [string, Record<string, unknown>, string][] = [
      ['match_capabilities', { demand_id: demandId, top_k: 0 }, 'arguments.top_k'],
      ['match_capabilities', { demand_id: demandId, top_k: 51 }, 'arguments.top_k'],
      ['match_capabilities', { demand_id: demandId, top_k: '5' }, 'arguments.top_k'],
      ['match_capabilities', { demand_id: 'nope' }, 'arguments.demand_id'],
      ['create_demand', { description: '' }, 'arguments.description'],
      ['create_demand', { description: '   ' }, 'arguments.description'],
      ['create_demand', { description: 'd'.repeat(10_001) }, 'arguments.description'],
      ['create_demand', { description: 'Budget needed', auto_accept: true }, 'arguments.max_price_ut'],
      ['create_demand', { description: 'Bad budget', max_price_ut: '1.234' }, 'arguments.max_price_ut'],
      ['create_demand', { description: 'Long key', idempotency_key: 'k'.repeat(65) }, 'arguments.idempotency_key'],
      ['create_demand', { description: 'Stray', surprise: 1 }, 'arguments'],
      ['search_capabilities', { page_size: 101 }, 'arguments.page_size'],
      ['search_capabilities', { page_size: 0 }, 'arguments.page_size'],
      ['search_capabilities', { page: 0 }, 'arguments.page'],
      ['search_capabilities', { page: '2' }, 'arguments.page'],
      ['search_capabilities', { q: '' }, 'arguments.q'],
      ['search_capabilities', { q: 'q'.repeat(201) }, 'arguments.q'],
      ['search_capabilities', { q: 'a b c d e f g h i j k' }, 'arguments.q'],
      ['search_capabilities', { min_price_ut: 20, max_price_ut: 10 }, 'arguments.max_price_ut'],
      ['search_capabilities', { category: 'cooking' }, 'arguments.category'],
      ['search_capabilities', { available: true }, 'arguments.available'],
      ['search_capabilities', { surprise: 1 }, 'arguments'],
    ];
    for (const [name, args, path] of cases) {
      const outcome = await callTool(client, name, args);
      expect(outcome, `${name} ${JSON.stringify(args).slice(0, 80)}`).toMatchObject({ isError: true, data: { code: 4000, message: 'validation_error' } });
      expect(outcome.data.data.errors.map((error: { path: string }) => error.path)).toContain(path);
    }
  });
});

describe('MCP: the market tools are listed', () => {
  it('with input schemas generated from the shared zod schemas and the limits', async () => {
    const { tools } = await (await clientOf(await createAgent(test))).listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('search_capabilities')!.inputSchema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      properties: {
        page: { type: 'integer', minimum: 1 },
        page_size: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        q: { maxLength: 200 },
        available: { enum: ['true', 'false', 'any'] },
      },
    });
    expect(byName.get('search_capabilities')!.inputSchema).not.toHaveProperty('required');
    expect(byName.get('match_capabilities')!.inputSchema).toMatchObject({
      type: 'object',
      required: ['demand_id'],
      properties: { top_k: { minimum: 1, maximum: 50, default: 10 } },
    });
    const createDemandSchema = byName.get('create_demand')!.inputSchema;
    expect(createDemandSchema).toMatchObject({ type: 'object', required: ['description'], properties: { idempotency_key: { maxLength: 64 } } });
    expect(byName.get('create_demand')!.description).toMatch(/idempotency_key/);

    // The filters and the demand's fields are the ones the OpenAPI document publishes for REST.
    const document = await test.http.get('/api/v1/public/openapi.json').expect(200);
    // Without REST's unions: an amount is a decimal string, owner one string pattern (test/helpers/mcp.ts).
    expectSameAsRest(createDemandSchema.properties as Record<string, any>, document.body.components.schemas.DemandCreate.properties);
    expectSameAsRest(byName.get('match_capabilities')!.inputSchema.properties as Record<string, any>, document.body.components.schemas.MatchRequest.properties);
    const listParameters = document.body.paths['/api/v1/capabilities'].get.parameters as { name: string; schema: Record<string, any> }[];
    const searchProperties = byName.get('search_capabilities')!.inputSchema.properties as Record<string, any>;
    const { page: _page, page_size: _size, ...filters } = searchProperties;
    expectSameAsRest(
      filters,
      Object.fromEntries(
        listParameters.filter((candidate) => !['page', 'page_size'].includes(candidate.name)).map((parameter) => [parameter.name, parameter.schema]),
      ),
    );
    expect(Object.keys(searchProperties).sort()).toEqual(listParameters.map((parameter) => parameter.name).sort());
    expect(searchProperties.owner.pattern).toMatch(/^\^\(\?:me\|/);
  });
});

describe('MCP: the acceptance path in one client', () => {
  it('lists and reads the categories resource, finds a capability, buys it, and the wallet shows the hold', async () => {
    const seller = await createAgent(test);
    const word = `otter${randomUUID().slice(0, 8)}`;
    const offer = await createCapability(test, seller, { title: `Kelp ${word} census`, category: 'data', price_ut: '12.50' });
    const buyer = await createAgent(test);
    await credit(test, buyer.userId, '30.00');
    const client = await clientOf(buyer);

    expect((await client.listResources()).resources.map((resource) => resource.uri)).toContain('marketplace://categories');
    const read = await client.readResource({ uri: 'marketplace://categories' });
    const categories = JSON.parse((read.contents[0] as { text: string }).text).categories as { code: string; capability_count: number }[];
    expect(categories.find((category) => category.code === 'data')!.capability_count).toBeGreaterThanOrEqual(1);

    const found = await callTool(client, 'search_capabilities', { q: word, category: 'data' });
    expect(ids(found.data.items)).toEqual([offer.id]);
    const bought = await callTool(client, 'buy_capability', { capability_id: found.data.items[0].id });
    expectSuccess(bought);
    expect(bought.data.transaction).toMatchObject({ status: 'frozen', price_ut: '12.50' });
    expect((await callTool(client, 'get_wallet')).data.ut).toMatchObject({ available: '17.50', frozen: '12.50', total: '30.00' });
    expect(await balance(test, buyer)).toMatchObject({ available: '17.50', frozen: '12.50' });
  });
});
