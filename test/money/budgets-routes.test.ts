import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, pageOrigin, setBudget } from '../helpers/agent-budgets.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createCapability, credit } from '../helpers/market.ts';

/**
 * Setting, reading and clearing an agent budget (docs/decisions/money-and-escrow.md "Agent
 * budgets"), who may, and where a person and an agent see it: the key list, GET /api/v1/auth/me.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const budgetPath = (keyId: string) => `/api/v1/auth/api-keys/${keyId}/budget`;

describe('setting a budget', () => {
  it('the owner sets, reads, replaces and clears it; the answer names the currency, today and what is left', async () => {
    const agent = await ownedAgent(test);
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toBeNull();
    const set = await setBudget(test, agent.person, agent.apiKeyId, { per_purchase_max: '5', daily_max: '20.00', categories: ['translation'] });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({
      api_key_id: agent.apiKeyId,
      currency: 'UT',
      per_purchase_max: '5.00',
      daily_max: '20.00',
      categories: ['translation'],
      capability_ids: null,
      spent_today: '0.00',
      left_today: '20.00',
    });
    const midnight = new Date(test.clock.now);
    midnight.setUTCHours(24, 0, 0, 0);
    expect(set.body.data.resets_at).toBe(midnight.toISOString());
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ daily_max: '20.00', categories: ['translation'] });
    // A PUT replaces the whole budget: what it leaves out is unbounded.
    expect((await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '7.50' })).body.data).toMatchObject({
      per_purchase_max: null,
      daily_max: '7.50',
      categories: null,
    });
    const cleared = await test.http.delete(budgetPath(agent.apiKeyId)).set(agent.person.headers).expect(200);
    expect(cleared.body.data).toEqual({ api_key_id: agent.apiKeyId, budget: null });
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toBeNull();
  });

  it('refuses amounts and lists that are not ones, and another currency than the key spends in', async () => {
    const agent = await ownedAgent(test);
    const refusals = [
      { daily_max: '-1' },
      { per_purchase_max: '1.234' },
      { categories: ['not_a_category'] },
      { capability_ids: ['nope'] },
      { currency: 'CNY', daily_max: '1.00' },
      { daily_max: '1.00', unknown: true },
    ];
    for (const body of refusals) {
      const answer = await setBudget(test, agent.person, agent.apiKeyId, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.code).toBe(4000);
    }
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toBeNull();
  });
});

describe('who may', () => {
  it('only the person who owns the key: the agent itself is refused (4030), even to raise its own budget; another person and the operator key are not found', async () => {
    const agent = await ownedAgent(test);
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '1.00' }).expect(200);
    // The key itself, and the same person acting through it: an agent cannot raise what bounds it.
    for (const method of ['put', 'delete', 'get'] as const) {
      const answer = await test.http[method](budgetPath(agent.apiKeyId)).set(agent.headers).send({ daily_max: '1000.00' });
      expect(answer.status, method).toBe(403);
      expect(answer.body.code).toBe(4030);
    }
    const stranger = await signUpHuman(test);
    for (const method of ['put', 'delete', 'get'] as const) {
      const answer = await test.http[method](budgetPath(agent.apiKeyId)).set(stranger.headers).send({ daily_max: '1000.00' });
      expect(answer.body.code, method).toBe(4040);
    }
    // An operator's key has no owner: nobody sets a budget on it.
    const platform = await createAgent(test);
    expect((await setBudget(test, agent.person, platform.apiKeyId, { daily_max: '1.00' })).body.code).toBe(4040);
    expect((await setBudget(test, agent.person, randomUUID(), { daily_max: '1.00' })).body.code).toBe(4040);
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ daily_max: '1.00' });
  });

  it('a browser on another site may not change it', async () => {
    const agent = await ownedAgent(test);
    const answer = await test.http
      .put(budgetPath(agent.apiKeyId))
      .set(agent.person.headers)
      .set('Origin', 'https://elsewhere.example')
      .send({ daily_max: '1.00' });
    expect(answer.body.code).toBe(4030);
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toBeNull();
  });
});

describe('where it shows', () => {
  it('the key list shows each key with its budget and what is left today; GET /auth/me shows the agent its own', async () => {
    const agent = await ownedAgent(test);
    const other = await ownedAgent(test, agent.person);
    await setBudget(test, agent.person, agent.apiKeyId, { per_purchase_max: '3.00', daily_max: '10.00' }).expect(200);
    await credit(test, agent.userId, '100.00');
    const seller = await createAgent(test);
    const capability = await createCapability(test, seller, { price_ut: '2.50' });
    const bought = await test.http
      .post('/api/v1/transactions')
      .set(agent.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id })
      .expect(201);
    await test.http.post(`/api/v1/transactions/${bought.body.data.id}/freeze`).set(agent.headers).expect(200);

    const list = (await test.http.get('/api/v1/auth/api-keys').set(agent.person.headers).expect(200)).body.data;
    const byId = new Map(list.items.map((item: { id: string }) => [item.id, item]));
    expect(byId.get(agent.apiKeyId)).toMatchObject({ budget: { per_purchase_max: '3.00', daily_max: '10.00', spent_today: '2.50', left_today: '7.50' } });
    expect(byId.get(other.apiKeyId)).toMatchObject({ budget: null });

    const me = (await test.http.get('/api/v1/auth/me').set(agent.headers).expect(200)).body.data;
    expect(me.agent_budget).toMatchObject({ api_key_id: agent.apiKeyId, spent_today: '2.50', left_today: '7.50' });
    expect((await test.http.get('/api/v1/auth/me').set(other.headers).expect(200)).body.data.agent_budget).toBeNull();
    expect((await test.http.get('/api/v1/auth/me').set(agent.person.headers).expect(200)).body.data.agent_budget).toBeNull();
    expect((await test.http.get('/api/v1/auth/me').set(seller.headers).expect(200)).body.data.agent_budget).toBeNull();
  });

  it('the OpenAPI document has the three routes, the 4021 refusal on the charging routes, and the budget in the key list', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').set('Origin', pageOrigin).expect(200)).body;
    const operations = document.paths['/api/v1/auth/api-keys/{id}/budget'];
    expect(Object.keys(operations).sort()).toEqual(['delete', 'get', 'put']);
    expect(JSON.stringify(document.components.schemas.ApiKeyWithBudget)).toContain('AgentBudget');
    for (const [path, method] of [
      ['/api/v1/transactions/{tx_id}/freeze', 'post'],
      ['/api/v1/capabilities/{cap_id}/invoke', 'post'],
      ['/api/v1/tasks/', 'post'],
      ['/api/v1/tasks/{task_id}/applications/{app_id}/accept', 'post'],
    ] as const) {
      expect(JSON.stringify(document.paths[path][method].responses['402']), path).toContain('4021 agent_budget_exceeded');
    }
  });
});
