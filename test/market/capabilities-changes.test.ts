import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance, buy, createCapability } from '../helpers/market.ts';

let test: TestApp;
let owner: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  owner = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const path = (id: string) => `/api/v1/capabilities/${id}`;
const put = (actor: Actor | { headers: Record<string, string> }, id: string, body: unknown) =>
  test.http
    .put(path(id))
    .set(actor.headers)
    .send(body as object);
const remove = (actor: Actor | { headers: Record<string, string> }, id: string) => test.http.delete(path(id)).set(actor.headers);
const read = (actor: Actor, id: string) => test.http.get(path(id)).set(actor.headers);
const rpcSend = (actor: Actor, capabilityId: string) =>
  test.http
    .post('/api/v1/rpc')
    .set(actor.headers)
    .send({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'data', data: { capability_id: capabilityId } }] } },
    });

describe('PUT /api/v1/capabilities/{id}', () => {
  it('changes only the fields sent, and moves updated_at', async () => {
    const created = (await createCapability(test, owner, { tags: ['a'], daily_limit: 5 })) as Record<string, unknown> & { id: string };
    test.clock.advanceMs(1_000);
    const response = await put(owner, created.id, { title: 'Renamed', price_ut: '12.5' }).expect(200);
    const { callback_secret: _secret, ...before } = created;
    expect(response.body.data).toEqual({ ...before, title: 'Renamed', price_ut: '12.50', updated_at: expect.any(String) });
    expect(Date.parse(response.body.data.updated_at)).toBeGreaterThan(Date.parse(created.updated_at as string));
    expect((await read(owner, created.id).expect(200)).body.data).toEqual(response.body.data);
  });

  it('changes every field at once and clears the optional settings with null', async () => {
    const { id } = await createCapability(test, owner, { auto_accept_min_ut: '5', daily_limit: 3, rate_limit_per_min: 2 });
    const body = {
      description: 'New description',
      category: 'design',
      capability_type: 'tool',
      pricing_model: 'per_hour',
      tags: ['x', 'y'],
      delivery_mode: 'async',
      callback_timeout_sec: 120,
      auto_accept_min_ut: null,
      daily_limit: null,
      rate_limit_per_min: null,
      callback_url: null,
    };
    const data = (await put(owner, id, body).expect(200)).body.data;
    const { callback_url: _never, ...shown } = body;
    expect(data).toMatchObject(shown);
    expect(data).not.toHaveProperty('callback_url');
    const row = await test.runtime.database.db('capabilities').where({ id }).first();
    expect(row.callback_url).toBeNull();
  });

  it('withdraws with available=false (not buyable, not listed) and offers again with available=true', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    expect((await put(seller, capability.id, { available: false }).expect(200)).body.data.available).toBe(false);
    const refused = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id })
      .expect(404);
    expect(refused.body.code).toBe(4040);
    expect((await read(buyer, capability.id).expect(200)).body.data.available).toBe(false);
    const listed = await test.http.get('/api/v1/capabilities').set(buyer.headers).query({ owner: seller.userId }).expect(200);
    expect(listed.body.data.items).toEqual([]);
    await put(seller, capability.id, { available: true }).expect(200);
    await buy(test, buyer, capability.id);
  });

  it('keeps the terms of past transactions: a new price applies to new purchases only', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const before = await buy(test, buyer, capability.id);
    await put(seller, capability.id, { price_ut: '20.00' }).expect(200);
    // A repeat buyer accepts the raised price by naming it (docs/decisions/money-and-escrow.md "Price ceilings").
    const after = await buy(test, buyer, capability.id, { max_price: '20.00' });
    expect((await test.http.get(`/api/v1/transactions/${before.id}`).set(buyer.headers).expect(200)).body.data.price_ut).toBe('10.00');
    expect(after.price_ut).toBe('20.00');
  });

  it('keeps a callback_url for per_use and per_query after the update', async () => {
    const perUse = await createCapability(test, owner);
    const removed = await put(owner, perUse.id, { callback_url: null }).expect(400);
    expect(removed.body.data.errors).toEqual([{ path: 'body.callback_url', message: expect.any(String) }]);
    const perHour = await createCapability(test, owner, { pricing_model: 'per_hour', callback_url: undefined });
    expect((await put(owner, perHour.id, { pricing_model: 'per_query' }).expect(400)).body.data.errors[0].path).toBe('body.callback_url');
    expect((await put(owner, perHour.id, { pricing_model: 'per_query', callback_url: 'https://seller.example/q' }).expect(200)).body.data.pricing_model).toBe(
      'per_query',
    );
    // Moving to a model that needs no callback may drop it.
    expect((await put(owner, perUse.id, { pricing_model: 'subscription', callback_url: null }).expect(200)).body.data.pricing_model).toBe('subscription');
  });

  it.each([
    ['an empty body', {}, 'body'],
    ['an unknown field', { colour: 'blue' }, 'body'],
    ['an owner set in the request', { agent_id: randomUUID() }, 'body'],
    ['a title over 200 characters', { title: 'x'.repeat(201) }, 'body.title'],
    ['an empty title', { title: ' ' }, 'body.title'],
    ['a null title', { title: null }, 'body.title'],
    ['an unknown category', { category: 'astrology' }, 'body.category'],
    ['an unknown capability_type', { capability_type: 'magic' }, 'body.capability_type'],
    ['an unknown pricing_model', { pricing_model: 'per_minute' }, 'body.pricing_model'],
    ['a null price', { price_ut: null }, 'body.price_ut'],
    ['a price with 3 decimals', { price_ut: '1.001' }, 'body.price_ut'],
    ['callback_timeout_sec 4', { callback_timeout_sec: 4 }, 'body.callback_timeout_sec'],
    ['callback_timeout_sec 121', { callback_timeout_sec: 121 }, 'body.callback_timeout_sec'],
    ['daily_limit 0', { daily_limit: 0 }, 'body.daily_limit'],
    ['a callback_url that is not http(s)', { callback_url: 'ftp://example.com/x' }, 'body.callback_url'],
    ['available as a string', { available: 'false' }, 'body.available'],
  ])('refuses %s with 4000', async (_name, body, errorPath) => {
    const { id } = await createCapability(test, owner);
    const response = await put(owner, id, body).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(errorPath);
  });

  it('refuses a JSON array body with 4001 and an id that is not a UUID with 4000', async () => {
    const { id } = await createCapability(test, owner);
    expect((await put(owner, id, [{ title: 'x' }]).expect(400)).body.code).toBe(4001);
    expect((await put(owner, 'nope', { title: 'x' }).expect(400)).body.data.errors[0].path).toBe('params.cap_id');
  });
});

describe('DELETE /api/v1/capabilities/{id}', () => {
  it('soft-deletes: gone from reads, lists, changes and purchases; a second delete is 4040', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const response = await remove(seller, capability.id).expect(200);
    expect(response.body.data).toEqual({ id: capability.id, deleted: true, deleted_at: expect.any(String) });
    expect((await read(seller, capability.id).expect(404)).body.code).toBe(4040);
    expect((await read(buyer, capability.id).expect(404)).body.code).toBe(4040);
    expect((await remove(seller, capability.id).expect(404)).body.code).toBe(4040);
    expect((await put(seller, capability.id, { title: 'Back' }).expect(404)).body.code).toBe(4040);
    expect(
      (
        await test.http
          .post(`${path(capability.id)}/rotate-secret`)
          .set(seller.headers)
          .expect(404)
      ).body.code,
    ).toBe(4040);
    const listed = await test.http.get('/api/v1/capabilities').set(seller.headers).query({ owner: 'me', available: 'any' }).expect(200);
    expect(listed.body.data.items).toEqual([]);
    const bought = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id })
      .expect(404);
    expect(bought.body.code).toBe(4040);
    const rpc = await rpcSend(buyer, capability.id).expect(200);
    expect(rpc.body.error.data).toMatchObject({ code: 4040 });
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const row = await test.runtime.database.db('capabilities').where({ id: capability.id }).first();
    expect(row).toMatchObject({ available: false, deleted_at: expect.any(Date) });
  });

  it('leaves past transactions readable with their capability_id', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const tx = await buy(test, buyer, capability.id);
    await act(test, buyer, tx.id, 'cancel').expect(200);
    await remove(seller, capability.id).expect(200);
    for (const party of [buyer, seller]) {
      expect((await test.http.get(`/api/v1/transactions/${tx.id}`).set(party.headers).expect(200)).body.data.capability_id).toBe(capability.id);
    }
  });

  it('lets a transaction in flight finish: the seller accepts and delivers, the buyer confirms, the money settles', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const tx = await buy(test, buyer, capability.id);
    await act(test, buyer, tx.id, 'freeze').expect(200);
    await remove(seller, capability.id).expect(200);
    await act(test, seller, tx.id, 'accept').expect(200);
    await act(test, seller, tx.id, 'deliver', { result_payload: { done: true } }).expect(200);
    expect((await act(test, buyer, tx.id, 'confirm').expect(200)).body.data.status).toBe('settled');
    expect(await balance(test, buyer)).toMatchObject({ available: '90.00', frozen: '0.00' });
    expect((await balance(test, seller)).available).toBe('10.00');
  });

  it(raceTest('answers two concurrent deletes with one 200 and one 4040'), async () => {
    const { id } = await createCapability(test, owner);
    const answers = await Promise.all([remove(owner, id), remove(owner, id)]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404]);
  });

  it(raceTest('serialises an update and a delete: the capability ends deleted either way'), async () => {
    const { id } = await createCapability(test, owner);
    const [updated, deleted] = await Promise.all([put(owner, id, { available: true, title: 'Racing' }), remove(owner, id)]);
    expect(deleted.status).toBe(200);
    expect([200, 404]).toContain(updated.status);
    const row = await test.runtime.database.db('capabilities').where({ id }).first();
    expect(row).toMatchObject({ available: false, deleted_at: expect.any(Date) });
  });
});

describe('PUT and DELETE: who may call', () => {
  const calls = [
    { name: 'PUT', call: (actor: { headers: Record<string, string> }, id: string) => put(actor, id, { title: 'Mine now' }) },
    { name: 'DELETE', call: (actor: { headers: Record<string, string> }, id: string) => remove(actor, id) },
  ];

  it.each(calls)('$name: another user of the space is 4030, the other space 4040, an unknown id 4040', async ({ call }) => {
    const { id } = await createCapability(test, owner);
    expect((await call(await createAgent(test), id).expect(403)).body.code).toBe(4030);
    expect((await call(human, id).expect(404)).body.code).toBe(4040);
    expect((await call(owner, randomUUID()).expect(404)).body.code).toBe(4040);
    expect((await read(owner, id).expect(200)).body.data).toMatchObject({ title: 'Summarize a PDF', available: true });
  });

  it.each(calls)('$name: a human owner manages a human capability; an agent caller cannot see it', async ({ call }) => {
    const { id } = await createCapability(test, human);
    expect((await call(owner, id).expect(404)).body.code).toBe(4040);
    await call(human, id).expect(200);
  });

  it.each(calls)('$name: no credentials and a bad token are 4010, mixed credentials 4011', async ({ call }) => {
    const { id } = await createCapability(test, owner);
    expect((await call({ headers: {} }, id).expect(401)).body.code).toBe(4010);
    expect((await call({ headers: { Authorization: 'Bearer not.a.token' } }, id).expect(401)).body.code).toBe(4010);
    expect((await call({ headers: { ...owner.headers, ...human.headers } }, id).expect(400)).body.code).toBe(4011);
  });
});
