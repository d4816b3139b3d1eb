import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * What an agent budget bounds and when it frees (docs/decisions/money-and-escrow.md "Agent
 * budgets"): the per-purchase bound, the categories and capabilities it allows, the UTC day by
 * the engine's clock, what a release gives back, and who it does not bound.
 */
let test: TestApp;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
});
afterAll(async () => {
  await test.close();
  await callbacks.close();
});

type Json = Record<string, any>;

async function buyer(budget: Json | null) {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, '100.00');
  if (budget) await setBudget(test, agent.person, agent.apiKeyId, budget).expect(200);
  return agent;
}

async function offer(capability: Json = {}) {
  return createCapability(test, await createAgent(test), capability);
}

/** A purchase as REST makes it: create, then freeze. Answers the freeze's answer (or the create's refusal). */
async function buy(actor: Actor, capabilityId: string) {
  const created = await test.http.post('/api/v1/transactions').set(actor.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capabilityId });
  if (created.status !== 201) return created;
  return test.http.post(`/api/v1/transactions/${created.body.data.id}/freeze`).set(actor.headers);
}

const spent = async (agent: Awaited<ReturnType<typeof buyer>>) => (await budgetOf(test, agent.person, agent.apiKeyId))!.spent_today as string;

describe('the bounds', () => {
  it('per purchase: a price above per_purchase_max is refused whatever is left today; at it, it buys', async () => {
    const agent = await buyer({ per_purchase_max: '2.00' });
    const before = await balance(test, agent);
    const refused = await buy(agent, (await offer({ price_ut: '2.01' })).id);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({
      code: 4021,
      data: { budget: 'per_purchase', price: '2.01', per_purchase_max: '2.00', daily_max: null, left_today: null },
    });
    expect(await balance(test, agent)).toEqual(before);
    expect((await buy(agent, (await offer({ price_ut: '2.00' })).id)).body.data.status).toBe('frozen');
  });

  it('allowed: only the categories named, or the capabilities named, whatever their category', async () => {
    const named = await offer({ category: 'design', price_ut: '1.00' });
    const agent = await buyer({ categories: ['translation'], capability_ids: [named.id] });
    const elsewhere = await offer({ category: 'ai_automation', price_ut: '1.00' });
    expect((await buy(agent, elsewhere.id)).body).toMatchObject({
      code: 4021,
      data: { budget: 'allowed', categories: ['translation'], capability_ids: [named.id] },
    });
    expect((await buy(agent, (await offer({ category: 'translation', price_ut: '1.00' })).id)).body.data.status).toBe('frozen');
    expect((await buy(agent, named.id)).body.data.status).toBe('frozen');
    expect(await spent(agent)).toBe('2.00');
  });

  it('a budget with 0.00 a day lets nothing through; a budget of nulls bounds nothing but counts', async () => {
    const capability = await offer({ price_ut: '0.50' });
    const closed = await buyer({ daily_max: '0' });
    expect((await buy(closed, capability.id)).body).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '0.00' } });
    const open = await buyer({});
    expect((await buy(open, capability.id)).body.data.status).toBe('frozen');
    expect(await budgetOf(test, open.person, open.apiKeyId)).toMatchObject({ spent_today: '0.50', left_today: null });
  });

  it("the operator's keys and a person's own session are not bounded by any budget", async () => {
    const capability = await offer({ price_ut: '5.00' });
    const agent = await buyer({ daily_max: '1.00' });
    expect((await buy(agent, capability.id)).body.code).toBe(4021);
    // An operator's key acting for a user: it has no owner, so no budget.
    const platform = await createAgent(test);
    await credit(test, platform.userId, '10.00');
    expect((await buy(platform, capability.id)).body.data.status).toBe('frozen');
    // The person whose key is bounded, signed in as themselves (a human buys in CNY, in the human space).
    await credit(test, agent.userId, '10.00', 'CNY');
    const human = await createCapability(test, (await ownedAgent(test)).person, { price_ut: '5.00' });
    expect((await buy(agent.person, human.id)).body.data.status).toBe('frozen');
  });
});

describe('the day and what comes back', () => {
  it("the day is UTC by the engine's clock: at midnight the day's bound is whole again; a release the day after gives back to its own day", async () => {
    const capability = await offer({ price_ut: '3.00' });
    const agent = await buyer({ daily_max: '5.00' });
    const first = await buy(agent, capability.id);
    expect(first.body.data.status).toBe('frozen');
    const refused = await buy(agent, capability.id);
    const midnight = new Date(test.clock.now);
    midnight.setUTCHours(24, 0, 0, 0);
    expect(refused.body.data).toMatchObject({ budget: 'daily', left_today: '2.00', resets_at: midnight.toISOString() });

    test.clock.advanceMs(midnight.getTime() - test.clock.now.getTime());
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ spent_today: '0.00', left_today: '5.00' });
    expect((await buy(agent, capability.id)).body.data.status).toBe('frozen');
    // Yesterday's purchase cancelled today: its 3.00 goes back to yesterday, not to today.
    await test.http.post(`/api/v1/transactions/${first.body.data.id}/cancel`).set(agent.headers).expect(200);
    expect(await spent(agent)).toBe('3.00');
    expect((await buy(agent, capability.id)).body).toMatchObject({ code: 4021, data: { left_today: '2.00' } });
  });

  it("a cancel, a seller's reject and a failed invoke give back what the purchase was charged; a settled one stays counted", async () => {
    const agent = await buyer({ daily_max: '10.00' });
    const seller = await createAgent(test);
    const capability = await createCapability(test, seller, { price_ut: '2.00' });
    const cancelled = (await buy(agent, capability.id)).body.data;
    const rejected = (await buy(agent, capability.id)).body.data;
    expect(await spent(agent)).toBe('4.00');
    await test.http.post(`/api/v1/transactions/${cancelled.id}/cancel`).set(agent.headers).expect(200);
    await test.http.post(`/api/v1/transactions/${rejected.id}/reject`).set(seller.headers).expect(200);
    expect(await spent(agent)).toBe('0.00');

    const failing = await createCapability(test, seller, { price_ut: '3.00', pricing_model: 'per_query', callback_url: callbacks.url('/status-500') });
    const failed = await test.http
      .post(`/api/v1/capabilities/${failing.id}/invoke`)
      .set(agent.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ input: {} });
    expect(failed.body.code).toBe(5020);
    expect(await spent(agent)).toBe('0.00');

    const settled = (await buy(agent, capability.id)).body.data;
    await test.http.post(`/api/v1/transactions/${settled.id}/accept`).set(seller.headers).expect(200);
    await test.http
      .post(`/api/v1/transactions/${settled.id}/deliver`)
      .set(seller.headers)
      .send({ result_payload: { done: true } })
      .expect(200);
    await test.http.post(`/api/v1/transactions/${settled.id}/confirm`).set(agent.headers).expect(200);
    expect(await spent(agent)).toBe('2.00');
    expect(await balance(test, agent)).toMatchObject({ available: '98.00', frozen: '0.00' });
  });

  it("a budget set after the day's first purchases counts from then on; clearing and setting it again the same day keeps the day's count", async () => {
    const capability = await offer({ price_ut: '1.00' });
    const agent = await buyer(null);
    expect((await buy(agent, capability.id)).body.data.status).toBe('frozen');
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '1.50' }).expect(200);
    expect(await spent(agent)).toBe('0.00');
    expect((await buy(agent, capability.id)).body.data.status).toBe('frozen');
    await test.http.delete(`/api/v1/auth/api-keys/${agent.apiKeyId}/budget`).set(agent.person.headers).expect(200);
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '1.50' }).expect(200);
    expect(await spent(agent)).toBe('1.00');
    expect((await buy(agent, capability.id)).body).toMatchObject({ code: 4021, data: { left_today: '0.50' } });
  });

  it("a day's usage and charges are pruned by the sweeper once 30 days old; the budget itself stays", async () => {
    const capability = await offer({ price_ut: '1.00' });
    const agent = await buyer({ daily_max: '5.00' });
    expect((await buy(agent, capability.id)).body.data.status).toBe('frozen');
    const { db } = test.runtime.engine.dependencies;
    const rowsOf = async (table: string) => Number((await db(table).where({ api_key_id: agent.apiKeyId }).count({ count: '*' }))[0]!.count);
    expect([await rowsOf('agent_budget_usage'), await rowsOf('agent_budget_charges')]).toEqual([1, 1]);
    await test.runtime.engine.sweeper.runOnce();
    expect(await rowsOf('agent_budget_usage')).toBe(1);
    test.clock.advanceMs(31 * 24 * 60 * 60 * 1000);
    await test.runtime.engine.sweeper.runOnce();
    expect([await rowsOf('agent_budget_usage'), await rowsOf('agent_budget_charges')]).toEqual([0, 0]);
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ daily_max: '5.00', spent_today: '0.00' });
  });
});
