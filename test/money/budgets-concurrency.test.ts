import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { type OwnedAgent, budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { rpcCaller } from '../helpers/a2a.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * Parallel charges of one key at the edge of its agent budget (docs/decisions/money-and-escrow.md
 * "Agent budgets"): whatever the path and however many at once, the key is never charged more than
 * its day allows, and the wallet shows exactly what the budget counted. Checked through the API.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
const clients: Client[] = [];
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  const server = await listen(test);
  baseUrl = server.url;
  closeServer = server.close;
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await closeServer();
  await test.close();
  await callbacks.close();
});

const parallel = 20;

async function funded(budget: Record<string, unknown> | null) {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, '100.00');
  if (budget) await setBudget(test, agent.person, agent.apiKeyId, budget).expect(200);
  return agent;
}

const frozenOf = async (agent: OwnedAgent) =>
  (await test.http.get('/api/v1/transactions?status=frozen&page_size=100').set(agent.headers).expect(200)).body.data.total as number;

async function expectCharged(agent: OwnedAgent, amount: string, bought: number, outcomes: { code: number }[]) {
  expect(outcomes.filter((outcome) => outcome.code === 0)).toHaveLength(bought);
  expect(outcomes.filter((outcome) => outcome.code !== 0).every((outcome) => outcome.code === 4021)).toBe(true);
  expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ spent_today: amount });
  expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
}

describe('parallel charges at the edge of a budget', () => {
  it(raceTest(`${parallel} freezes of pending purchases at once where 7 fit: exactly 7 frozen, 7.00 charged`), async () => {
    const agent = await funded(null);
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const pending: string[] = [];
    for (let index = 0; index < parallel; index++) {
      const created = await test.http
        .post('/api/v1/transactions')
        .set(agent.headers)
        .set('Idempotency-Key', randomUUID())
        .send({ capability_id: capability.id });
      pending.push(created.body.data.id as string);
    }
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '7.00' }).expect(200);
    const answers = await Promise.all(pending.map((id) => test.http.post(`/api/v1/transactions/${id}/freeze`).set(agent.headers)));
    await expectCharged(
      agent,
      '7.00',
      7,
      answers.map((answer) => answer.body),
    );
    expect(await frozenOf(agent)).toBe(7);
    expect(await balance(test, agent)).toMatchObject({ available: '93.00', frozen: '7.00' });
  });

  it(raceTest(`${parallel} A2A purchases at once where 7 fit: 7 bought, the rest refused with nothing frozen`), async () => {
    const agent = await funded({ daily_max: '7.00' });
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const rpc = rpcCaller(test);
    const answers = await Promise.all(
      Array.from({ length: parallel }, () =>
        rpc.call(agent, 'SendMessage', { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } }),
      ),
    );
    await expectCharged(
      agent,
      '7.00',
      7,
      answers.map((answer) => ({ code: answer.error ? (answer.error.data?.code as number) : 0 })),
    );
    expect(await frozenOf(agent)).toBe(7);
    expect(await balance(test, agent)).toMatchObject({ available: '93.00', frozen: '7.00' });
  });

  it(raceTest('every path at once (REST freezes, invokes, bounties held, MCP purchases) where 9 of 20 fit: exactly 9.00 leaves the balance'), async () => {
    const agent = await funded({ daily_max: '9.00' });
    const seller = await createAgent(test);
    const capability = await createCapability(test, seller, { price_ut: '1.00' });
    const instant = await createCapability(test, seller, { price_ut: '1.00', pricing_model: 'per_query', callback_url: callbacks.url('/ok') });
    const pending: string[] = [];
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '100.00' }).expect(200);
    for (let index = 0; index < 5; index++) {
      const created = await test.http
        .post('/api/v1/transactions')
        .set(agent.headers)
        .set('Idempotency-Key', randomUUID())
        .send({ capability_id: capability.id });
      pending.push(created.body.data.id as string);
    }
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '9.00' }).expect(200);
    const client = await connectMcp(baseUrl, agent.headers);
    clients.push(client);
    const calls: Promise<{ code: number }>[] = [
      ...pending.map(async (id) => (await test.http.post(`/api/v1/transactions/${id}/freeze`).set(agent.headers)).body as { code: number }),
      ...Array.from({ length: 5 }, async () => {
        const answer = await test.http
          .post(`/api/v1/capabilities/${instant.id}/invoke`)
          .set(agent.headers)
          .set('Idempotency-Key', randomUUID())
          .send({ input: {} });
        return answer.body as { code: number };
      }),
      ...Array.from({ length: 5 }, async () => {
        const task = { title: 'Logo for a bakery', description: 'Three concepts', mode: 'online', category: 'design', bounty_amount: '1.00' };
        return (await test.http.post('/api/v1/tasks/').set(agent.headers).send(task)).body as { code: number };
      }),
      ...Array.from({ length: 5 }, async () => {
        const outcome = await callTool(client, 'buy_capability', { capability_id: capability.id });
        return { code: outcome.isError ? (outcome.data.code as number) : 0 };
      }),
    ];
    const outcomes = await Promise.all(calls);
    await expectCharged(agent, '9.00', 9, outcomes);
    // Settled invokes paid the seller, the rest is frozen: 9.00 left the available balance, no more.
    expect((await balance(test, agent)).available).toBe('91.00');
  });
});
