import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buyCapability, seeCapability, actorOf, seeTransaction } from '../../src/engine/access/index.ts';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, buy, createCapability, credit } from '../helpers/market.ts';

/**
 * Walks the declared access rules (src/engine/access/) through the API: for every rule, a caller
 * who breaks only that rule gets the declared refusal; for every party action, the other party
 * gets 4030 and the party itself is never refused for who it is. A rule added to a table without
 * a caller here that breaks it fails this file.
 */
let test: TestApp;
let buyer: Actor;
let buyerAsHuman: Actor;
let seller: Actor;
let stranger: Actor;
let capabilityId: string;

beforeAll(async () => {
  test = await startTestApp();
  // One user reachable as an agent and as a human (the other space), like transactions-access.
  const human = await signUpHuman(test);
  const key = await createApiKey(test);
  await linkUser(test, key.id, human.userId);
  buyer = { userId: human.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': human.userId } };
  buyerAsHuman = human;
  seller = await createAgent(test);
  stranger = await createAgent(test);
  await credit(test, buyer.userId, '1000.00');
  capabilityId = (await createCapability(test, seller, { price_ut: '1.00' })).id;
});
afterAll(() => test.close());

const statusOf = async (id: string) => (await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data.status as string;
const bodyOf = (action: string) => (action === 'deliver' ? { result_payload: { ok: true } } : undefined);

describe('who may see a transaction', () => {
  const breakers: Record<string, () => Actor> = {
    "the transaction is in the caller's space": () => buyerAsHuman,
    'the caller is its buyer or its seller': () => stranger,
  };

  it.each(seeTransaction.map((rule) => [rule.says]))('a caller breaking "%s" gets 4040 on reading and on every action', async (says) => {
    expect(breakers[says], `no caller here breaks the rule "${says}"`).toBeDefined();
    const caller = breakers[says]!();
    const { id } = await buy(test, buyer, capabilityId);
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(caller.headers).expect(404)).body.code).toBe(4040);
    for (const action of Object.keys(actorOf).filter((each) => ['buyer', 'seller'].includes(actorOf[each as keyof typeof actorOf]))) {
      const response = await act(test, caller, id, action, bodyOf(action));
      expect([action, response.status, response.body.code]).toEqual([action, 404, 4040]);
    }
    expect(await statusOf(id)).toBe('pending_freeze');
  });
});

describe('which party takes which action', () => {
  const partyActions = Object.entries(actorOf).filter(([, actor]) => actor === 'buyer' || actor === 'seller');

  it('covers every action a party can take through the API', () => {
    expect(partyActions.map(([action]) => action).sort()).toEqual(['accept', 'cancel', 'confirm', 'deliver', 'dispute', 'freeze', 'reject']);
  });

  it.each(partyActions)("%s is the %s's: the other party gets 4030, and it stays unchanged", async (action, actor) => {
    const { id } = await buy(test, buyer, capabilityId);
    const [party, otherParty] = actor === 'buyer' ? [buyer, seller] : [seller, buyer];
    const refused = await act(test, otherParty, id, action, bodyOf(action)).expect(403);
    expect(refused.body).toMatchObject({ code: 4030, data: { detail: `only the ${actor} may ${action}` } });
    expect(await statusOf(id)).toBe('pending_freeze');
    // The party itself is refused only by the state table: from pending_freeze it may freeze or
    // cancel; anything else is 4090 naming the state, never a refusal for who it is.
    const allowed = await act(test, party, id, action, bodyOf(action));
    if (action === 'freeze' || action === 'cancel') {
      expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    } else {
      expect(allowed.status).toBe(409);
      expect(allowed.body).toMatchObject({ code: 4090, data: { status: 'pending_freeze', action } });
    }
  });
});

describe('who may see and buy a capability', () => {
  /** Each rule broken by a caller or a capability made to break it through the API. */
  const deletedCapability = async () => {
    const { id } = await createCapability(test, seller);
    await test.http.delete(`/api/v1/capabilities/${id}`).set(seller.headers).expect(200);
    return id;
  };
  const withdrawnCapability = async () => {
    const { id } = await createCapability(test, seller);
    await test.http.put(`/api/v1/capabilities/${id}`).set(seller.headers).send({ available: false }).expect(200);
    return id;
  };
  const breakers: Record<string, { caller: () => Actor; capability: () => Promise<string>; status: number; code: number }> = {
    "the capability is in the caller's space": { caller: () => buyerAsHuman, capability: async () => capabilityId, status: 404, code: 4040 },
    'the capability has not been deleted': { caller: () => buyer, capability: deletedCapability, status: 404, code: 4040 },
    'the capability is still offered': { caller: () => buyer, capability: withdrawnCapability, status: 404, code: 4040 },
    "the capability is not the caller's own": { caller: () => seller, capability: async () => capabilityId, status: 403, code: 4030 },
  };

  it.each(seeCapability.map((rule) => [rule.says]))('a caller breaking "%s" cannot read it (4040)', async (says) => {
    expect(breakers[says], `no caller here breaks the rule "${says}"`).toBeDefined();
    const breaker = breakers[says]!;
    const response = await test.http.get(`/api/v1/capabilities/${await breaker.capability()}`).set(breaker.caller().headers);
    expect([response.status, response.body.code]).toEqual([404, 4040]);
  });

  it.each(buyCapability.map((rule) => [rule.says]))('a buyer breaking "%s" is refused and nothing is created', async (says) => {
    expect(breakers[says], `no caller here breaks the rule "${says}"`).toBeDefined();
    const breaker = breakers[says]!;
    const caller = breaker.caller();
    const purchases = async () =>
      (await test.http.get('/api/v1/transactions').set(caller.headers).query({ role: 'buyer' }).expect(200)).body.data.total as number;
    const before = await purchases();
    const response = await test.http
      .post('/api/v1/transactions')
      .set(caller.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: await breaker.capability() });
    expect([response.status, response.body.code]).toEqual([breaker.status, breaker.code]);
    expect(await purchases()).toBe(before);
  });
});

describe('whose money a caller sees', () => {
  it("shows a caller its own balances only, and its space's history only", async () => {
    const other = await createAgent(test);
    await credit(test, other.userId, '3.00');
    await credit(test, other.userId, '4.00', 'CNY');
    const wallet = await test.http.get('/api/v1/wallet/').set(other.headers).expect(200);
    expect(wallet.body.data).toMatchObject({ ut: { available: '3.00' }, cash: { available: '4.00' } });
    const agentHistory = await test.http.get('/api/v1/wallet/transactions').set(other.headers).expect(200);
    expect(agentHistory.body.data.items.map((item: { currency: string; amount: string }) => [item.currency, item.amount])).toEqual([['UT', '3.00']]);
    const otherCurrency = await test.http.get('/api/v1/wallet/transactions').set(other.headers).query({ currency: 'CNY' }).expect(200);
    expect(otherCurrency.body.data.items).toEqual([]);
  });
});
