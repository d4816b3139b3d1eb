import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type OwnedAgent, budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { balance, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * The task paths of a person's own key within its agent budget (docs/decisions/money-and-escrow.md
 * "Agent budgets"): a bounty held at publish or raised is charged, lowered or ended gives back;
 * accepting an application charges only what the price adds to the hold, and a selection's
 * acceptance is charged to the key that selected. Over the budget: 4021, and nothing moves.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
const clients: Client[] = [];
beforeAll(async () => {
  test = await startTestApp();
  const server = await listen(test);
  baseUrl = server.url;
  closeServer = server.close;
});
afterAll(async () => {
  for (const client of clients) await client.close();
  await closeServer();
  await test.close();
});

type Json = Record<string, any>;

async function publisher(budget: Json) {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, '100.00');
  await setBudget(test, agent.person, agent.apiKeyId, budget).expect(200);
  return agent;
}

const taskBody = (bounty: string | null, extra: Json = {}) => ({
  title: 'Logo for a bakery',
  description: 'Three concepts, vector files',
  mode: 'online',
  category: 'design',
  ...(bounty === null ? {} : { bounty_amount: bounty }),
  ...extra,
});
const publish = (actor: Actor, bounty: string | null, extra: Json = {}) => test.http.post('/api/v1/tasks/').set(actor.headers).send(taskBody(bounty, extra));
const myTasks = async (actor: Actor) => (await test.http.get('/api/v1/tasks/').set(actor.headers).expect(200)).body.data.total as number;

/** An applicant with a design skill, applying at `price` (null: the bounty). */
async function application(taskId: string, price: string | null, applicant?: Actor) {
  const worker = applicant ?? (await createAgent(test));
  const skill = (
    await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)
  ).body.data;
  const applied = await test.http
    .post(`/api/v1/tasks/${taskId}/applications`)
    .set(worker.headers)
    .send({ skill_id: skill.id, ...(price === null ? {} : { proposed_price: price }) })
    .expect(201);
  return { worker, skill, applicationId: applied.body.data.id as string };
}

const accept = (actor: Actor, taskId: string, applicationId: string, body: Json = {}) =>
  test.http.post(`/api/v1/tasks/${taskId}/applications/${applicationId}/accept`).set(actor.headers).send(body);
const spent = async (agent: OwnedAgent) => (await budgetOf(test, agent.person, agent.apiKeyId))!.spent_today as string;

describe('bounty holds', () => {
  it('a bounty beyond the budget is refused (nothing published, not even a draft); within it, it is charged, and raising it too', async () => {
    const agent = await publisher({ per_purchase_max: '30.00', daily_max: '40.00' });
    const before = await balance(test, agent);
    for (const [bounty, bound] of [
      ['31.00', 'per_purchase'],
      ['30.00', null],
    ] as const) {
      const answer = await publish(agent, bounty);
      if (bound === null) {
        expect(answer.status).toBe(201);
        continue;
      }
      expect(answer.status).toBe(402);
      expect(answer.body).toMatchObject({ code: 4021, data: { budget: bound, price: bounty, per_purchase_max: '30.00' } });
      expect(await balance(test, agent)).toEqual(before);
      expect(await myTasks(agent)).toBe(0);
    }
    expect(await spent(agent)).toBe('30.00');
    // 10.00 left today: a second task of 11.00 is refused, and so is raising the first by 11.00.
    const refused = await publish(agent, '11.00');
    expect(refused.body).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '10.00', amount: '11.00' } });
    const [task] = (await test.http.get('/api/v1/tasks/').set(agent.headers).expect(200)).body.data.items;
    const held = await balance(test, agent);
    const raise = await test.http.put(`/api/v1/tasks/${task.id}`).set(agent.headers).send({ bounty_amount: '41.00' });
    expect(raise.body).toMatchObject({ code: 4021, data: { budget: 'per_purchase' } });
    const lowered = await test.http.put(`/api/v1/tasks/${task.id}`).set(agent.headers).send({ bounty_amount: '29.00' });
    expect(lowered.status).toBe(200);
    expect(await spent(agent)).toBe('29.00');
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(agent.headers).send({ bounty_amount: '30.00', category: 'translation' })).status).toBe(200);
    expect(await spent(agent)).toBe('30.00');
    const tooMuch = await test.http.put(`/api/v1/tasks/${task.id}`).set(agent.headers).send({ bounty_amount: '41.00' });
    expect(tooMuch.body.code).toBe(4021);
    expect(await balance(test, agent)).toEqual(held);
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(agent.headers).expect(200)).body.data).toMatchObject({ bounty_held: '30.00' });
  });

  it('closing a task, or lowering its bounty, gives back what its hold was charged; a draft a short balance kept holds nothing', async () => {
    const agent = await publisher({ daily_max: '20.00' });
    const task = (await publish(agent, '15.00').expect(201)).body.data;
    expect(await spent(agent)).toBe('15.00');
    await test.http.put(`/api/v1/tasks/${task.id}`).set(agent.headers).send({ bounty_amount: '5.00' }).expect(200);
    expect(await spent(agent)).toBe('5.00');
    await test.http.post(`/api/v1/tasks/${task.id}/close`).set(agent.headers).expect(200);
    expect(await spent(agent)).toBe('0.00');
    // More than the balance (100.00): kept as a draft with 4020, and nothing stays charged.
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '500.00' }).expect(200);
    expect((await publish(agent, '150.00')).body.code).toBe(4020);
    expect(await spent(agent)).toBe('0.00');
  });

  it('over MCP, publish_task is refused the same way and answers what is left when it publishes', async () => {
    const agent = await publisher({ daily_max: '10.00' });
    const client = await connectMcp(baseUrl, agent.headers);
    clients.push(client);
    const published = await callTool(client, 'publish_task', taskBody('4.00'));
    expect(published).toMatchObject({ isError: false, data: { task: { bounty_held: '4.00' }, agent_budget: { left_today: '6.00' } } });
    expect(await callTool(client, 'publish_task', taskBody('7.00'))).toMatchObject({ isError: true, data: { code: 4021, data: { left_today: '6.00' } } });
  });

  it('categories: a task outside the categories the budget names is refused; a task without one too', async () => {
    const agent = await publisher({ categories: ['translation'] });
    expect((await publish(agent, '1.00')).body).toMatchObject({ code: 4021, data: { budget: 'allowed', categories: ['translation'] } });
    expect((await publish(agent, '1.00', { category: undefined })).body.code).toBe(4021);
    expect((await publish(agent, '1.00', { category: 'translation' })).status).toBe(201);
    // Without a bounty nothing is held, so nothing is charged or refused.
    expect((await publish(agent, null)).status).toBe(201);
  });
});

describe('accepting an application', () => {
  it('charges only what the price adds to the bounty held; beyond the budget it is refused and the task keeps its hold', async () => {
    const agent = await publisher({ per_purchase_max: '20.00', daily_max: '12.00' });
    const task = (await publish(agent, '10.00').expect(201)).body.data;
    const { applicationId } = await application(task.id, '14.00');
    const before = await balance(test, agent);
    const refused = await accept(agent, task.id, applicationId, { max_price: '14.00' });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ code: 4021, data: { budget: 'daily', amount: '4.00', price: '14.00', left_today: '2.00' } });
    expect(await balance(test, agent)).toEqual(before);
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(agent.headers).expect(200)).body.data).toMatchObject({ status: 'open', bounty_held: '10.00' });

    const cheaper = await application(task.id, '8.00');
    const accepted = (await accept(agent, task.id, cheaper.applicationId).expect(200)).body.data;
    expect(accepted.transaction).toMatchObject({ status: 'frozen', price_ut: '8.00' });
    // The hold became the freeze: 10.00 charged, 2.00 of it given back with the released difference.
    expect(await spent(agent)).toBe('8.00');
    // The seller rejects: the purchase is released, and so is what it was charged.
    await test.http.post(`/api/v1/transactions/${accepted.transaction.id}/reject`).set(cheaper.worker.headers).expect(200);
    expect(await spent(agent)).toBe('0.00');
  });

  it("a price above the key's per-purchase bound is refused even when the hold covers it", async () => {
    const owner = await ownedAgent(test);
    await credit(test, owner.userId, '100.00');
    const task = (await publish(owner, '50.00').expect(201)).body.data;
    await setBudget(test, owner.person, owner.apiKeyId, { per_purchase_max: '20.00' }).expect(200);
    const { applicationId } = await application(task.id, null);
    expect((await accept(owner, task.id, applicationId)).body).toMatchObject({ code: 4021, data: { budget: 'per_purchase', price: '50.00' } });
  });

  it("a selection's acceptance is charged to the key that made the selection", async () => {
    const agent = await publisher({ daily_max: '12.00' });
    const task = (await publish(agent, '10.00').expect(201)).body.data;
    const worker = await createAgent(test);
    const skill = (
      await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)
    ).body.data;
    const selection = (
      await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(agent.headers).send({ skill_id: skill.id, price: '15.00' }).expect(201)
    ).body.data;
    const before = await balance(test, agent);
    const answer = (await test.http.post(`/api/v1/tasks/pushes/${selection.id}/respond`).set(worker.headers).send({ decision: 'accept' }).expect(200)).body
      .data;
    expect(answer.accepted).toBeNull();
    expect(answer.acceptance_error).toMatchObject({ code: 4021, data: { budget: 'daily', amount: '5.00', left_today: '2.00' } });
    expect(await balance(test, agent)).toEqual(before);
    // Room for it: the publisher's owner raises the budget, and the publisher accepts the pending application.
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '15.00' }).expect(200);
    const accepted = (await accept(agent, task.id, answer.application_id).expect(200)).body.data;
    expect(accepted.transaction).toMatchObject({ price_ut: '15.00', status: 'frozen' });
    expect(await spent(agent)).toBe('15.00');
  });
});
