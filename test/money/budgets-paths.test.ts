import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type OwnedAgent, budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { candidatesOf, rpcCaller, v10Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { createDemand } from '../helpers/demands.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * Every path that buys a capability checks the agent budget of a person's own key in the database
 * transaction of its freeze (docs/decisions/money-and-escrow.md "Agent budgets"): REST (create,
 * freeze), invoke, JSON-RPC (A2A), MCP and a demand's auto-accept. Over the budget each is refused
 * with 4021 naming the bound and what is left, and the buyer's balance is what it was. The task
 * paths are in budgets-tasks.test.ts.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
let rpc: ReturnType<typeof rpcCaller>;
const clients: Client[] = [];
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  const server = await listen(test);
  baseUrl = server.url;
  closeServer = server.close;
  rpc = rpcCaller(test);
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await closeServer();
  await test.close();
  await callbacks.close();
});

type Json = Record<string, any>;

/** A person's own key with this budget and 100.00 UT, and a seller's capability at `price`. */
async function market(budget: Json, price: string, capability: Json = {}) {
  const buyer = await ownedAgent(test);
  await credit(test, buyer.userId, '100.00');
  await setBudget(test, buyer.person, buyer.apiKeyId, budget).expect(200);
  const seller = await createAgent(test);
  const offered = await createCapability(test, seller, { price_ut: price, ...capability });
  return { buyer, seller, capability: offered };
}

const instant = () => ({ pricing_model: 'per_query', callback_url: callbacks.url('/ok') });

const create = (buyer: Actor, capabilityId: string, extra: Json = {}) =>
  test.http
    .post('/api/v1/transactions')
    .set(buyer.headers)
    .set('Idempotency-Key', randomUUID())
    .send({ capability_id: capabilityId, ...extra });
const freeze = (buyer: Actor, id: string) => test.http.post(`/api/v1/transactions/${id}/freeze`).set(buyer.headers).set('Idempotency-Key', randomUUID());
const invoke = (buyer: Actor, capabilityId: string) =>
  test.http.post(`/api/v1/capabilities/${capabilityId}/invoke`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ input: {} });
const transactionCount = async (buyer: Actor) => (await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total as number;

/** 3.00 bought of a daily 5.00: the next 3.00 is refused, 2.00 left. */
const dailyRefusal = {
  code: 4021,
  message: 'agent_budget_exceeded',
  data: { budget: 'daily', currency: 'UT', daily_max: '5.00', left_today: '2.00', amount: '3.00' },
};

async function expectUntouched(buyer: OwnedAgent, before: Json) {
  expect(await balance(test, buyer)).toEqual(before);
}

describe('REST', () => {
  it('a purchase beyond the day is refused at create (nothing created) and at freeze (nothing frozen), naming what is left', async () => {
    const { buyer, capability } = await market({ daily_max: '5.00' }, '3.00');
    const first = (await create(buyer, capability.id).expect(201)).body.data;
    expect((await freeze(buyer, first.id).expect(200)).body.data.status).toBe('frozen');
    const before = await balance(test, buyer);
    expect(before).toMatchObject({ available: '97.00', frozen: '3.00' });

    const refused = await create(buyer, capability.id);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject(dailyRefusal);
    expect(refused.body.data.detail).toContain('2.00 left today');
    expect(await transactionCount(buyer)).toBe(1);
    await expectUntouched(buyer, before);

    // Two created while the day had room; the owner lowers the budget before the second freeze.
    await setBudget(test, buyer.person, buyer.apiKeyId, { daily_max: '8.00' }).expect(200);
    const second = (await create(buyer, capability.id).expect(201)).body.data;
    await setBudget(test, buyer.person, buyer.apiKeyId, { daily_max: '5.00' }).expect(200);
    const late = await freeze(buyer, second.id);
    expect(late.status).toBe(402);
    expect(late.body).toMatchObject(dailyRefusal);
    await expectUntouched(buyer, before);
    expect((await test.http.get(`/api/v1/transactions/${second.id}`).set(buyer.headers).expect(200)).body.data.status).toBe('pending_freeze');
    expect(await budgetOf(test, buyer.person, buyer.apiKeyId)).toMatchObject({ spent_today: '3.00', left_today: '2.00' });
  });

  it('invoke: refused before the callback is called, nothing charged', async () => {
    const { buyer, capability } = await market({ daily_max: '5.00' }, '3.00', instant());
    expect((await invoke(buyer, capability.id).expect(200)).body.data).toMatchObject({ status: 'settled', charged_ut: '3.00' });
    const calls = callbacks.received.filter((call) => call.body.includes(capability.id)).length;
    const before = await balance(test, buyer);
    const refused = await invoke(buyer, capability.id);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject(dailyRefusal);
    await expectUntouched(buyer, before);
    expect(callbacks.received.filter((call) => call.body.includes(capability.id))).toHaveLength(calls);
  });
});

describe('JSON-RPC (A2A)', () => {
  const dataMessage = (data: Json) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data }] } });

  it('a purchase in a data part, and an instant one: refused with -32121 carrying 4021; a send that buys shows what is left', async () => {
    for (const capability of [{}, instant()]) {
      const { buyer, capability: offered } = await market({ daily_max: '5.00' }, '3.00', capability);
      const bought = (await rpc.ok(buyer, 'SendMessage', dataMessage({ capability_id: offered.id }))).task;
      expect(bought.metadata.marketplace.agent_budget).toMatchObject({ api_key_id: buyer.apiKeyId, spent_today: '3.00', left_today: '2.00' });
      const before = await balance(test, buyer);
      const refused = await rpc.call(buyer, 'SendMessage', dataMessage({ capability_id: offered.id }));
      expect(refused.error).toMatchObject({ code: -32121, data: dailyRefusal });
      const v03 = await rpc.call(buyer, 'message/send', {
        message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: offered.id } }] },
      });
      expect(v03.error).toMatchObject({ code: -32121 });
      await expectUntouched(buyer, before);
      expect(await transactionCount(buyer)).toBe(1);
    }
  });
});

describe('JSON-RPC (A2A) conversation', () => {
  it('a pick beyond the budget is refused with nothing charged; the conversation keeps choosing', async () => {
    const topic = `zk${randomBytes(4).toString('hex')}`;
    const { buyer, capability } = await market({ per_purchase_max: '2.00' }, '3.00', {
      title: `Translate ${topic} manuals into French`,
      description: `French translations of ${topic} manuals`,
    });
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`Translate my ${topic} manual into French`))).task;
    const candidate = candidatesOf(started).candidates.find((entry: Json) => entry.capability_id === capability.id)!;
    const before = await balance(test, buyer);
    const refused = await rpc.call(buyer, 'SendMessage', v10Text(String(candidate.number), { taskId: started.id }));
    expect(refused.error).toMatchObject({ code: -32121, data: { code: 4021, data: { budget: 'per_purchase', price: '3.00' } } });
    await expectUntouched(buyer, before);
    expect((await rpc.ok(buyer, 'GetTask', { id: started.id })).metadata.marketplace).toMatchObject({ status: 'choosing', transaction_id: null });
  });
});

describe('MCP', () => {
  it('buy_capability: refused with 4021 and nothing charged; a purchase answers what is left', async () => {
    const { buyer, capability } = await market({ daily_max: '5.00' }, '3.00');
    const client = await connectMcp(baseUrl, buyer.headers);
    clients.push(client);
    const bought = await callTool(client, 'buy_capability', { capability_id: capability.id });
    expect(bought).toMatchObject({ isError: false, data: { transaction: { status: 'frozen' }, agent_budget: { left_today: '2.00' } } });
    const before = await balance(test, buyer);
    const refused = await callTool(client, 'buy_capability', { capability_id: capability.id });
    expect(refused).toMatchObject({ isError: true, data: dailyRefusal });
    await expectUntouched(buyer, before);
  });

  it('a key without a budget answers agent_budget null', async () => {
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '10.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const client = await connectMcp(baseUrl, buyer.headers);
    clients.push(client);
    expect((await callTool(client, 'buy_capability', { capability_id: capability.id })).data).toMatchObject({ agent_budget: null });
  });
});

describe('auto-accept', () => {
  it("a demand's auto-accept buys within the budget of the key that made it; beyond it nothing is bought and the demand says why", async () => {
    const topic = `zq${randomBytes(4).toString('hex')}`;
    const words = { title: `Translate ${topic} manuals into Chinese`, description: `Chinese translations of ${topic} manuals`, category: 'translation' };
    const { buyer, seller } = await market({ daily_max: '5.00' }, '1.00');
    // Only this test's offer is on the market, so that no other test's capability is the match bought.
    await test.runtime.engine.dependencies.db('capabilities').update({ available: false });
    await createCapability(test, seller, { ...words, price_ut: '6.00' });
    const before = await balance(test, buyer);
    const refused = await createDemand(test, buyer, { description: `Translate my ${topic} manual into Chinese`, max_price_ut: '10.00', auto_accept: true });
    expect(refused.status).toBe('open');
    expect(refused.auto_accept_failure).toMatchObject({ code: 4021, message: 'agent_budget_exceeded', data: { budget: 'daily', left_today: '5.00' } });
    await expectUntouched(buyer, before);
    expect(await transactionCount(buyer)).toBe(0);

    // The same demand from a key with room buys, and is charged to that key's budget.
    await setBudget(test, buyer.person, buyer.apiKeyId, { daily_max: '6.00' }).expect(200);
    const bought = await createDemand(test, buyer, { description: `Translate my ${topic} manual into Chinese`, max_price_ut: '10.00', auto_accept: true });
    expect(bought.status).toBe('fulfilled');
    expect(await budgetOf(test, buyer.person, buyer.apiKeyId)).toMatchObject({ spent_today: '6.00', left_today: '0.00' });
  });
});
