import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { type OwnedAgent, type Person, ownedAgent, pageOrigin } from '../helpers/agent-budgets.ts';
import { rpcCaller } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { createDemand } from '../helpers/demands.ts';
import { buy, createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { pendingSignIn, token } from '../helpers/oauth.ts';
import { listen } from '../helpers/server.ts';

/**
 * Each agent's transactions (issue 31, the console's My agents; docs/decisions/money-and-escrow.md
 * "Agent budgets"): every transaction records the person's own key that made it, whichever path
 * made it (REST, JSON-RPC, MCP, a task's acceptance), and GET /api/v1/auth/agent-transactions
 * lists one key's with `api_key_id`. The key is shown to the buyer only.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
let rpc: ReturnType<typeof rpcCaller>;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
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

const agentTransactions = (person: Person, query: Record<string, string> = {}) =>
  test.http.get('/api/v1/auth/agent-transactions').query(query).set(person.headers);

async function listed(person: Person, query: Record<string, string> = {}) {
  const answer = await agentTransactions(person, query).expect(200);
  return answer.body.data as { items: Json[]; total: number; has_more: boolean; next_cursor: string | null };
}

/** A key the person makes by hand on the console, as an agent uses it. */
async function consoleKey(person: Person): Promise<OwnedAgent> {
  const made = (await test.http.post('/api/v1/auth/api-keys').set(person.headers).set('Origin', pageOrigin).send({ name: 'Script' }).expect(201)).body.data;
  return {
    userId: person.userId,
    apiKey: made.api_key,
    apiKeyId: made.key.id,
    person,
    headers: { 'X-Api-Key': made.api_key, 'X-Platform-User-Id': person.userId },
  };
}

/** An MCP grant the person allows through the consent page's API, and its access token. */
async function mcpGrant(person: Person) {
  // Tokens are issued for the server's public address (its MCP endpoint), whatever port the test listens on.
  const signIn = await pendingSignIn(baseUrl, `${test.runtime.engine.dependencies.config.publicBaseUrl}/mcp`);
  const decided = await test.http
    .post(`/api/v1/auth/oauth/requests/${signIn.requestId}/decision`)
    .set(person.headers)
    .send({ decision: 'approve' })
    .expect(200);
  const code = new URL(decided.body.data.redirect_to).searchParams.get('code')!;
  const tokens = await token(baseUrl, {
    grant_type: 'authorization_code',
    code,
    client_id: signIn.client.client_id,
    redirect_uri: signIn.client.redirect_uris[0]!,
    code_verifier: signIn.verifier,
  });
  expect(tokens.status).toBe(200);
  const keys = (await test.http.get('/api/v1/auth/api-keys').set(person.headers).expect(200)).body.data.items as Json[];
  const key = keys.find((item) => item.origin === 'mcp')!;
  return { accessToken: tokens.body.access_token as string, apiKeyId: key.id as string };
}

/** A seller who is a person too (so their own list can be read), with one capability at `price`. */
async function sellerWith(price = '1.00') {
  const seller = await ownedAgent(test);
  const capability = await createCapability(test, seller, { price_ut: price });
  return { seller, capability };
}

const rowOf = async (id: string) =>
  (await test.runtime.engine.dependencies.db('transactions').where({ id }).first('api_key_id')) as { api_key_id: string | null };

describe('the key that made each transaction', () => {
  it('two keys of one person each buy: the list by key shows each its own, the whole list each with its key', async () => {
    const person = await signUpHuman(test);
    await credit(test, person.userId, '50.00');
    const device = await ownedAgent(test, person);
    const made = await consoleKey(person);
    const { capability } = await sellerWith();
    const byDevice = await buy(test, device, capability.id);
    const byConsole = await buy(test, made, capability.id);

    const deviceList = await listed(person, { api_key_id: device.apiKeyId });
    expect(deviceList.items.map((item) => [item.id, item.api_key_id])).toEqual([[byDevice.id, device.apiKeyId]]);
    expect(deviceList.total).toBe(1);
    const consoleList = await listed(person, { api_key_id: made.apiKeyId });
    expect(consoleList.items.map((item) => [item.id, item.api_key_id])).toEqual([[byConsole.id, made.apiKeyId]]);
    // Without a key: all of the person's agent-space transactions, newest first, each with its key.
    const all = await listed(person);
    expect(all.items.map((item) => [item.id, item.api_key_id])).toEqual([
      [byConsole.id, made.apiKeyId],
      [byDevice.id, device.apiKeyId],
    ]);
  });

  it("one key's list pages with the cursor and page numbers, and keeps to that key", async () => {
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '50.00');
    const other = await consoleKey(buyer.person);
    const { capability } = await sellerWith();
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      ids.unshift((await buy(test, buyer, capability.id)).id);
      await buy(test, other, capability.id);
      test.clock.advanceMs(1000);
    }
    const first = await listed(buyer.person, { api_key_id: buyer.apiKeyId, page_size: '2' });
    expect(first).toMatchObject({ total: 3, has_more: true });
    const second = await listed(buyer.person, { api_key_id: buyer.apiKeyId, page_size: '2', cursor: first.next_cursor! });
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    expect([...first.items, ...second.items].map((item) => item.id)).toEqual(ids);
    const byPage = await listed(buyer.person, { api_key_id: buyer.apiKeyId, page_size: '2', page: '2' });
    expect(byPage.items.map((item) => item.id)).toEqual([ids[2]]);
  });

  it('a JSON-RPC (A2A) purchase records its key', async () => {
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '10.00');
    const { capability } = await sellerWith();
    const message = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] } };
    const bought = (await rpc.ok(buyer, 'SendMessage', message)).task;
    const transactionId = bought.metadata.marketplace.transaction_id as string;
    expect((await listed(buyer.person, { api_key_id: buyer.apiKeyId })).items.map((item) => item.id)).toEqual([transactionId]);
  });

  it('an MCP grant records its key, beside the device grant of the same person', async () => {
    const person = await signUpHuman(test);
    await credit(test, person.userId, '10.00');
    const device = await ownedAgent(test, person);
    const grant = await mcpGrant(person);
    const { capability } = await sellerWith();
    const client = await connectMcp(baseUrl, { Authorization: `Bearer ${grant.accessToken}` });
    clients.push(client);
    const bought = await callTool(client, 'buy_capability', { capability_id: capability.id });
    expect(bought.isError).toBe(false);
    const byDevice = await buy(test, device, capability.id);
    const mcpList = await listed(person, { api_key_id: grant.apiKeyId });
    expect(mcpList.items.map((item) => [item.id, item.api_key_id])).toEqual([[bought.data.transaction.id, grant.apiKeyId]]);
    expect((await listed(person, { api_key_id: device.apiKeyId })).items.map((item) => item.id)).toEqual([byDevice.id]);
  });

  it("a task's acceptance records the key that accepted", async () => {
    const publisher = await ownedAgent(test);
    await credit(test, publisher.userId, '50.00');
    const task = (
      await test.http
        .post('/api/v1/tasks/')
        .set(publisher.headers)
        .send({ title: 'Logo for a bakery', description: 'Three concepts', mode: 'online', category: 'design', bounty_amount: '10.00' })
        .expect(201)
    ).body.data;
    const worker = await createAgent(test);
    const skill = (await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Logos', description: 'Logos', category: 'design' }).expect(201))
      .body.data;
    const applied = (await test.http.post(`/api/v1/tasks/${task.id}/applications`).set(worker.headers).send({ skill_id: skill.id }).expect(201)).body.data;
    const accepted = await test.http.post(`/api/v1/tasks/${task.id}/applications/${applied.id}/accept`).set(publisher.headers).send({}).expect(200);
    const transactionId = accepted.body.data.transaction.id as string;
    expect((await listed(publisher.person, { api_key_id: publisher.apiKeyId })).items.map((item) => [item.id, item.api_key_id])).toEqual([
      [transactionId, publisher.apiKeyId],
    ]);
  });

  it("a person's own session records no key", async () => {
    const person = await signUpHuman(test);
    await credit(test, person.userId, '10.00', 'CNY');
    const seller = await signUpHuman(test);
    const capability = await createCapability(test, seller, { price_ut: '1.00' });
    const bought = await buy(test, person, capability.id);
    expect(await rowOf(bought.id)).toEqual({ api_key_id: null });
  });

  it('an invoke records its key', async () => {
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '10.00');
    const capability = await createCapability(test, await createAgent(test), {
      price_ut: '1.00',
      pricing_model: 'per_query',
      callback_url: callbacks.url('/ok'),
    });
    const invoked = await test.http
      .post(`/api/v1/capabilities/${capability.id}/invoke`)
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ input: {} });
    expect(invoked.status, JSON.stringify(invoked.body)).toBe(200);
    expect((await listed(buyer.person, { api_key_id: buyer.apiKeyId })).items).toMatchObject([
      { id: invoked.body.data.transaction_id, api_key_id: buyer.apiKeyId, status: 'settled' },
    ]);
  });

  it("a selection's acceptance, made when the applicant answers, records the key that selected", async () => {
    const publisher = await ownedAgent(test);
    await credit(test, publisher.userId, '50.00');
    const task = (
      await test.http
        .post('/api/v1/tasks/')
        .set(publisher.headers)
        .send({ title: 'Logo for a bakery', description: 'Three concepts', mode: 'online', category: 'design', bounty_amount: '10.00' })
        .expect(201)
    ).body.data;
    const worker = await createAgent(test);
    const skill = (await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Logos', description: 'Logos', category: 'design' }).expect(201))
      .body.data;
    const selection = (await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(publisher.headers).send({ skill_id: skill.id }).expect(201)).body.data;
    const answer = (await test.http.post(`/api/v1/tasks/pushes/${selection.id}/respond`).set(worker.headers).send({ decision: 'accept' }).expect(200)).body
      .data;
    const transactionId = answer.accepted.transaction.id as string;
    expect((await listed(publisher.person, { api_key_id: publisher.apiKeyId })).items.map((item) => [item.id, item.api_key_id])).toEqual([
      [transactionId, publisher.apiKeyId],
    ]);
  });

  // Last of this block: it takes every other offer off the market so that its own is the match.
  it("a demand's auto-accept records the key that made the demand", async () => {
    const topic = `zq${randomBytes(4).toString('hex')}`;
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '10.00');
    await test.runtime.engine.dependencies.db('capabilities').update({ available: false });
    await createCapability(test, await createAgent(test), {
      title: `Translate ${topic} manuals into Chinese`,
      description: `Chinese translations of ${topic} manuals`,
      category: 'translation',
      price_ut: '1.00',
    });
    const demand = await createDemand(test, buyer, { description: `Translate my ${topic} manual into Chinese`, max_price_ut: '5.00', auto_accept: true });
    expect(demand.status).toBe('fulfilled');
    expect((await listed(buyer.person, { api_key_id: buyer.apiKeyId })).items.map((item) => [item.id, item.api_key_id])).toEqual([
      [demand.transaction_id, buyer.apiKeyId],
    ]);
  });
});

describe('what the seller sees', () => {
  it("the seller learns nothing of the buyer's key: null in their list, absent from the transaction", async () => {
    const buyer = await ownedAgent(test);
    await credit(test, buyer.userId, '10.00');
    const { seller, capability } = await sellerWith();
    const bought = await buy(test, buyer, capability.id);
    expect(await rowOf(bought.id)).toEqual({ api_key_id: buyer.apiKeyId });
    const sales = await listed(seller.person);
    expect(sales.items.map((item) => [item.id, item.api_key_id])).toEqual([[bought.id, null]]);
    const seen = (await test.http.get(`/api/v1/transactions/${bought.id}`).set(seller.headers).expect(200)).body.data;
    expect(seen).not.toHaveProperty('api_key_id');
    // Nor does filtering by the buyer's key find it: the key is not the seller's.
    expect((await agentTransactions(seller.person, { api_key_id: buyer.apiKeyId })).body.code).toBe(4040);
  });
});

describe('refusals', () => {
  it("another person's key is 4040, as if it did not exist; so is a key that does not", async () => {
    const owner = await ownedAgent(test);
    const stranger = await signUpHuman(test);
    for (const keyId of [owner.apiKeyId, randomUUID()]) {
      const refused = await agentTransactions(stranger, { api_key_id: keyId }).expect(404);
      expect(refused.body).toMatchObject({ code: 4040, message: expect.any(String) });
    }
  });

  it('a key id that is not a UUID is a 400 envelope naming the field', async () => {
    const person = await signUpHuman(test);
    const refused = await agentTransactions(person, { api_key_id: 'not-a-uuid' }).expect(400);
    expect(refused.body.code).toBe(4000);
    expect(JSON.stringify(refused.body)).toContain('api_key_id');
  });

  it("no credentials: 401; an agent key (even the one asked about): 403, the list is the person's", async () => {
    const agent = await ownedAgent(test);
    const anonymous = await test.http.get('/api/v1/auth/agent-transactions').query({ api_key_id: agent.apiKeyId }).expect(401);
    expect(anonymous.body.code).toBe(4010);
    const asAgent = await test.http.get('/api/v1/auth/agent-transactions').query({ api_key_id: agent.apiKeyId }).set(agent.headers).expect(403);
    expect(asAgent.body.code).toBe(4030);
  });
});
