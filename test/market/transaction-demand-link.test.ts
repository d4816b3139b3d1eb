import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * `demand_id` on a purchase links it to the demand it is made for: only one of the buyer's own
 * demands in the space it buys in (any status; docs/decisions/matching.md "Demands and matching"); any
 * other demand is 4040 "demand not found" and nothing is created or charged. Checked in the
 * engine, so REST and JSON-RPC purchases (with and without an idempotency key) agree.
 */
type Json = Record<string, any>;

describe('a purchase linked to a demand', () => {
  let test: TestApp;
  // One person acting in both spaces: signed in as a human, and as an agent through a platform key.
  let person: Actor;
  let personAsAgent: Actor;
  let otherAgent: Actor;
  let otherHuman: Actor;
  const capabilities = { agent: '', human: '' };

  const purchase = (buyer: Actor, body: Record<string, unknown>) =>
    test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send(body);
  const sendMessage = async (buyer: Actor, data: Record<string, unknown>): Promise<Json> => {
    const message = { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data }] };
    return (await test.http.post('/api/v1/rpc').set(buyer.headers).send({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message } }).expect(200))
      .body;
  };
  const transactionsOf = async (buyer: Actor) =>
    (await test.http.get('/api/v1/transactions?role=buyer').set(buyer.headers).expect(200)).body.data.total as number;

  beforeAll(async () => {
    test = await startTestApp();
    const key = await createApiKey(test);
    // An agent acts for a human account through the platform key linked to it.
    const agentOf = async (human: Actor): Promise<Actor> => {
      await linkUser(test, key.id, human.userId);
      return { userId: human.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': human.userId } };
    };
    person = await signUpHuman(test);
    personAsAgent = await agentOf(person);
    otherAgent = await agentOf(await signUpHuman(test));
    otherHuman = await signUpHuman(test);
    const [agentSeller, humanSeller] = [await agentOf(await signUpHuman(test)), await signUpHuman(test)];
    capabilities.agent = (await createCapability(test, agentSeller, { price_ut: '5.00' })).id;
    capabilities.human = (await createCapability(test, humanSeller, { price_ut: '5.00' })).id;
    await credit(test, person.userId, '100.00', 'UT');
    await credit(test, person.userId, '100.00', 'CNY');
  });
  afterAll(() => test.close());

  it("links a purchase to the buyer's own demand, shown on the transaction (agent with a key, human without)", async () => {
    const agentDemand = await createDemand(test, personAsAgent, { description: 'Summarize a PDF report' });
    const created = await purchase(personAsAgent, { capability_id: capabilities.agent, demand_id: agentDemand.id }).expect(201);
    expect(created.body.data).toMatchObject({ demand_id: agentDemand.id, status: 'pending_freeze' });
    const read = await test.http.get(`/api/v1/transactions/${created.body.data.id}`).set(personAsAgent.headers).expect(200);
    expect(read.body.data.demand_id).toBe(agentDemand.id);

    const humanDemand = await createDemand(test, person, { description: '总结一份PDF报告' });
    const byHuman = await test.http
      .post('/api/v1/transactions')
      .set(person.headers)
      .send({ capability_id: capabilities.human, demand_id: humanDemand.id })
      .expect(201);
    expect(byHuman.body.data.demand_id).toBe(humanDemand.id);
    // The link is only a link: the demand stays as it was.
    expect((await test.http.get(`/api/v1/demands/${humanDemand.id}`).set(person.headers).expect(200)).body.data.status).toBe('open');
  });

  it("accepts the buyer's own demand whatever its status (here cancelled)", async () => {
    const demand = await createDemand(test, personAsAgent, { description: 'Summarize a PDF report' });
    await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(personAsAgent.headers).expect(200);
    expect((await purchase(personAsAgent, { capability_id: capabilities.agent, demand_id: demand.id }).expect(201)).body.data.demand_id).toBe(demand.id);
  });

  it.each([
    [
      'another user’s open demand of the same space',
      () => createDemand(test, otherAgent, { description: 'Summarize a PDF report' }).then((demand) => demand.id),
    ],
    ['the same user’s demand in the other space', () => createDemand(test, person, { description: 'Summarize a PDF report' }).then((demand) => demand.id)],
    ['an unknown demand', async () => randomUUID()],
  ])('refuses %s with 4040 "demand not found", creating and charging nothing', async (_name, demandOf) => {
    const demandId = await demandOf();
    const before = [await transactionsOf(personAsAgent), await balance(test, personAsAgent)];
    const refused = await purchase(personAsAgent, { capability_id: capabilities.agent, demand_id: demandId }).expect(404);
    expect(refused.body).toMatchObject({ code: 4040, data: { detail: 'demand not found' } });
    expect([await transactionsOf(personAsAgent), await balance(test, personAsAgent)]).toEqual(before);
  });

  it('refuses another human’s demand to a human buyer without a key, and an agent’s demand to the human (4040)', async () => {
    const theirs = await createDemand(test, otherHuman, { description: '总结一份PDF报告' });
    const agentDemand = await createDemand(test, personAsAgent, { description: 'Summarize a PDF report' });
    for (const demandId of [theirs.id, agentDemand.id]) {
      const refused = await test.http
        .post('/api/v1/transactions')
        .set(person.headers)
        .send({ capability_id: capabilities.human, demand_id: demandId })
        .expect(404);
      expect(refused.body).toMatchObject({ code: 4040, data: { detail: 'demand not found' } });
    }
  });

  it('applies the same check to a JSON-RPC purchase', async () => {
    const theirs = await createDemand(test, otherAgent, { description: 'Summarize a PDF report' });
    const refused = await sendMessage(personAsAgent, { capability_id: capabilities.agent, demand_id: theirs.id });
    expect(refused.error.data).toMatchObject({ code: 4040, data: { detail: 'demand not found' } });
    const mine = await createDemand(test, personAsAgent, { description: 'Summarize a PDF report' });
    const bought = await sendMessage(personAsAgent, { capability_id: capabilities.agent, demand_id: mine.id });
    expect(bought.result.metadata.marketplace).toMatchObject({ demand_id: mine.id, status: 'frozen' });
  });
});
