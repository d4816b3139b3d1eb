import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, buy, createCapability, credit } from '../helpers/market.ts';

let test: TestApp;
let agent: Actor & { apiKey: string };
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  agent = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const valid = {
  title: 'Translate a page',
  description: 'English to French',
  category: 'translation',
  capability_type: 'service',
  pricing_model: 'per_use',
  price_ut: '10.00',
  callback_url: 'https://seller.example/callback',
};
const post = (headers: Record<string, string>, body: unknown) =>
  test.http
    .post('/api/v1/capabilities')
    .set(headers)
    .send(body as object);
const getCapability = (headers: Record<string, string>, id: string) => test.http.get(`/api/v1/capabilities/${id}`).set(headers);
const rotate = (headers: Record<string, string>, id: string) => test.http.post(`/api/v1/capabilities/${id}/rotate-secret`).set(headers);

describe('POST /api/v1/capabilities: validation', () => {
  it.each([
    ['a title over 200 characters', { title: 'x'.repeat(201) }, 'body.title'],
    ['an empty title', { title: '   ' }, 'body.title'],
    ['an unknown category', { category: 'astrology' }, 'body.category'],
    ['an uppercase category code', { category: 'TRANSLATION' }, 'body.category'],
    ['an unknown capability_type', { capability_type: 'magic' }, 'body.capability_type'],
    ['an unknown pricing_model', { pricing_model: 'per_minute' }, 'body.pricing_model'],
    // undefined drops the field from the JSON body.
    ['per_query without callback_url', { pricing_model: 'per_query', callback_url: undefined }, 'body.callback_url'],
    ['per_use without callback_url', { pricing_model: 'per_use', callback_url: undefined }, 'body.callback_url'],
    ['a callback_url over 2000 characters', { callback_url: `https://example.com/${'a'.repeat(2000)}` }, 'body.callback_url'],
    ['a description over 10000 characters', { description: 'x'.repeat(10_001) }, 'body.description'],
    ['a category over 50 characters', { category: 'x'.repeat(51) }, 'body.category'],
    ['21 tags', { tags: Array.from({ length: 21 }, (_, index) => `tag${index}`) }, 'body.tags'],
    ['a tag over 50 characters', { tags: ['x'.repeat(51)] }, 'body.tags.0'],
    ['a negative auto_accept_min_ut', { auto_accept_min_ut: '-1' }, 'body.auto_accept_min_ut'],
    ['daily_limit over 1000000', { daily_limit: 1_000_001 }, 'body.daily_limit'],
    ['rate_limit_per_min 0', { rate_limit_per_min: 0 }, 'body.rate_limit_per_min'],
    ['rate_limit_per_min over 100000', { rate_limit_per_min: 100_001 }, 'body.rate_limit_per_min'],
    ['a price over the largest amount', { price_ut: '10000000000000.01' }, 'body.price_ut'],
    ['a callback_url that is not http(s)', { callback_url: 'ftp://example.com/run' }, 'body.callback_url'],
    ['callback_timeout_sec 4', { callback_timeout_sec: 4 }, 'body.callback_timeout_sec'],
    ['callback_timeout_sec 121', { callback_timeout_sec: 121 }, 'body.callback_timeout_sec'],
    ['a fractional callback_timeout_sec', { callback_timeout_sec: 30.5 }, 'body.callback_timeout_sec'],
    ['a price with 3 decimals (string)', { price_ut: '10.005' }, 'body.price_ut'],
    ['a price with 3 decimals (number)', { price_ut: 10.005 }, 'body.price_ut'],
    ['a negative price', { price_ut: -1 }, 'body.price_ut'],
    ['a non-numeric price', { price_ut: 'ten' }, 'body.price_ut'],
    ['an unknown delivery_mode', { delivery_mode: 'carrier_pigeon' }, 'body.delivery_mode'],
    ['daily_limit 0', { daily_limit: 0 }, 'body.daily_limit'],
    ['an unknown field', { colour: 'blue' }, 'body'],
    ['an owner set in the request (agent_id)', { agent_id: randomUUID() }, 'body'],
    ['an owner_type set in the request', { owner_type: 'human' }, 'body'],
  ])('refuses %s with 4000 and the offending path', async (_name, override, path) => {
    const response = await post(agent.headers, { ...valid, ...override }).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.message).toBe('validation_error');
    expect(response.body.data.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(new RegExp(`^${path.replace('.', '\\.')}`)) })]),
    );
    for (const error of response.body.data.errors) expect(error).toEqual({ path: expect.any(String), message: expect.any(String) });
  });

  it.each([
    ['title', 'title'],
    ['description', 'description'],
    ['category', 'category'],
    ['capability_type', 'capability_type'],
    ['pricing_model', 'pricing_model'],
  ])('refuses a request without the required %s with 4000', async (field) => {
    const { [field as keyof typeof valid]: _omitted, ...body } = valid;
    const response = await post(agent.headers, body).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(`body.${field}`);
  });

  it('refuses a body that is not JSON with 4001', async () => {
    const response = await test.http.post('/api/v1/capabilities').set(agent.headers).set('Content-Type', 'application/json').send('{"title": ').expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('refuses a JSON array body with 4001', async () => {
    const response = await post(agent.headers, [valid]).expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('accepts the boundaries: a 200-character title, callback_timeout_sec 5 and 120', async () => {
    await post(agent.headers, { ...valid, title: 'x'.repeat(200) }).expect(201);
    expect((await post(agent.headers, { ...valid, callback_timeout_sec: 5 }).expect(201)).body.data.callback_timeout_sec).toBe(5);
    expect((await post(agent.headers, { ...valid, callback_timeout_sec: 120 }).expect(201)).body.data.callback_timeout_sec).toBe(120);
  });

  it('accepts the other pricing models without a callback_url', async () => {
    for (const pricingModel of ['per_hour', 'per_day', 'subscription']) {
      const response = await post(agent.headers, { ...valid, pricing_model: pricingModel, callback_url: undefined }).expect(201);
      expect(response.body.data.pricing_model).toBe(pricingModel);
    }
  });

  it('accepts the upper bounds of the limits: 20 tags of 50 characters, daily_limit 1000000, rate_limit_per_min 100000', async () => {
    const tags = Array.from({ length: 20 }, (_, index) => `${index}`.padEnd(50, 'x'));
    const data = (await post(agent.headers, { ...valid, tags, daily_limit: 1_000_000, rate_limit_per_min: 100_000 }).expect(201)).body.data;
    expect(data).toMatchObject({ tags, daily_limit: 1_000_000, rate_limit_per_min: 100_000 });
  });

  it('accepts per_query with a callback_url', async () => {
    const response = await post(agent.headers, { ...valid, pricing_model: 'per_query', callback_url: 'https://example.com/run' }).expect(201);
    expect(response.body.data.pricing_model).toBe('per_query');
  });
});

describe('POST /api/v1/capabilities: the created capability', () => {
  it('takes its owner and space from API key credentials', async () => {
    const response = await post(agent.headers, valid).expect(201);
    expect(response.body.code).toBe(0);
    const data = response.body.data;
    expect(data).toMatchObject({
      agent_id: agent.userId,
      owner_type: 'agent',
      title: 'Translate a page',
      description: 'English to French',
      category: 'translation',
      capability_type: 'service',
      pricing_model: 'per_use',
      delivery_mode: 'instant',
      tags: [],
      price_ut: '10.00',
      currency: 'UT',
      auto_accept_min_ut: null,
      daily_limit: null,
      rate_limit_per_min: null,
      callback_timeout_sec: 30,
      quality_score: '0.00',
      total_sold: 0,
      available: true,
    });
    expect(data.id).toMatch(uuidPattern);
    expect(new Date(data.created_at).toISOString()).toBe(data.created_at);
    expect(new Date(data.updated_at).toISOString()).toBe(data.updated_at);
    // GET answers the same shape, without the secret that only the create answer shows.
    const { callback_secret: _secret, ...capability } = data;
    expect((await getCapability(agent.headers, data.id).expect(200)).body.data).toEqual(capability);
  });

  it('takes its owner and space from bearer credentials (human, CNY)', async () => {
    const data = (await post(human.headers, valid).expect(201)).body.data;
    expect(data).toMatchObject({ agent_id: human.userId, owner_type: 'human', currency: 'CNY', price_ut: '10.00', quality_score: '0.00', total_sold: 0 });
  });

  it.each([
    ['10', '10.00'],
    [10.5, '10.50'],
    ['0.01', '0.01'],
    ['9999999999.99', '9999999999.99'],
  ])('renders price_ut %j as %j', async (price, rendered) => {
    expect((await post(agent.headers, { ...valid, price_ut: price }).expect(201)).body.data.price_ut).toBe(rendered);
  });

  it('defaults price_ut to 0.00 and keeps the optional fields it was given', async () => {
    const { price_ut: _price, ...withoutPrice } = valid;
    const body = { ...withoutPrice, tags: ['fr', 'en'], delivery_mode: 'async', auto_accept_min_ut: '5', daily_limit: 10, rate_limit_per_min: 3 };
    const data = (await post(agent.headers, body).expect(201)).body.data;
    expect(data).toMatchObject({
      price_ut: '0.00',
      tags: ['fr', 'en'],
      delivery_mode: 'async',
      auto_accept_min_ut: '5.00',
      daily_limit: 10,
      rate_limit_per_min: 3,
    });
  });
});

describe('GET /api/v1/capabilities/{id}', () => {
  it('is visible to another caller of the same space', async () => {
    const other = await createAgent(test);
    const created = await createCapability(test, agent);
    expect((await getCapability(other.headers, created.id).expect(200)).body.data.id).toBe(created.id);
  });

  it('answers 4040 to a caller of the other space, in both directions', async () => {
    const agentCapability = await createCapability(test, agent);
    const humanCapability = await createCapability(test, human);
    expect((await getCapability(human.headers, agentCapability.id).expect(404)).body.code).toBe(4040);
    expect((await getCapability(agent.headers, humanCapability.id).expect(404)).body.code).toBe(4040);
  });

  it("answers 4040 even to the owner's own user id calling from the other space", async () => {
    // An agent acts for a human account's user id; with that user's bearer token it is in the human space.
    const owner = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, owner.userId);
    const linked = { userId: owner.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': owner.userId } };
    const capability = await createCapability(test, linked);
    expect((await getCapability(owner.headers, capability.id).expect(404)).body.code).toBe(4040);
  });

  it('answers 4040 for an unknown id and 4000 for an id that is not a UUID', async () => {
    expect((await getCapability(agent.headers, randomUUID()).expect(404)).body.code).toBe(4040);
    const bad = await getCapability(agent.headers, 'not-a-uuid').expect(400);
    expect(bad.body.code).toBe(4000);
    expect(bad.body.data.errors[0].path).toBe('params.cap_id');
  });

  it('treats an id written in uppercase as the same capability', async () => {
    const created = await createCapability(test, agent);
    expect((await getCapability(agent.headers, created.id.toUpperCase()).expect(200)).body.data.id).toBe(created.id);
  });

  it('counts only settled sales in total_sold', async () => {
    const seller = await createAgent(test);
    const buyer = await createAgent(test);
    await credit(test, buyer.userId, '100.00');
    const capability = await createCapability(test, seller, { price_ut: '10.00' });
    const settle = async () => {
      const tx = await buy(test, buyer, capability.id);
      await act(test, buyer, tx.id, 'freeze').expect(200);
      await act(test, seller, tx.id, 'accept').expect(200);
      await act(test, seller, tx.id, 'deliver', { result_payload: { ok: true } }).expect(200);
      await act(test, buyer, tx.id, 'confirm').expect(200);
    };
    await settle();
    await settle();
    // Not settled: one pending, one cancelled, one delivered.
    await buy(test, buyer, capability.id);
    const cancelled = await buy(test, buyer, capability.id);
    await act(test, buyer, cancelled.id, 'cancel').expect(200);
    const delivered = await buy(test, buyer, capability.id);
    await act(test, buyer, delivered.id, 'freeze').expect(200);
    await act(test, seller, delivered.id, 'accept').expect(200);
    await act(test, seller, delivered.id, 'deliver', { result_payload: {} }).expect(200);

    expect((await getCapability(seller.headers, capability.id).expect(200)).body.data.total_sold).toBe(2);
    expect((await getCapability(buyer.headers, capability.id).expect(200)).body.data.total_sold).toBe(2);
  });
});

describe('capabilities: who may call', () => {
  const endpoints = [
    { name: 'POST /api/v1/capabilities', call: (headers: Record<string, string>) => post(headers, valid) },
    { name: 'GET /api/v1/capabilities/{id}', call: (headers: Record<string, string>) => getCapability(headers, randomUUID()) },
    { name: 'POST /api/v1/capabilities/{id}/rotate-secret', call: (headers: Record<string, string>) => rotate(headers, randomUUID()) },
  ];

  it.each(endpoints)('$name: no credentials is 4010', async ({ call }) => {
    const response = await call({}).expect(401);
    expect(response.body.code).toBe(4010);
  });

  it.each(endpoints)('$name: a bad bearer token is 4010', async ({ call }) => {
    expect((await call({ Authorization: 'Bearer not.a.token' }).expect(401)).body.code).toBe(4010);
  });

  it.each(endpoints)('$name: an API key acting for an unlinked user is 4010', async ({ call }) => {
    expect((await call({ 'X-Api-Key': agent.apiKey, 'X-Platform-User-Id': human.userId }).expect(401)).body.code).toBe(4010);
  });

  it.each(endpoints)('$name: mixed credentials are 4011', async ({ call }) => {
    const response = await call({ ...agent.headers, ...human.headers }).expect(400);
    expect(response.body.code).toBe(4011);
  });

  it('an anonymous caller learns nothing from validation: an invalid body without credentials is 4010', async () => {
    expect((await post({}, { title: 'x'.repeat(500) }).expect(401)).body.code).toBe(4010);
  });
});

describe('POST /api/v1/capabilities with an Idempotency-Key', () => {
  it('registers once: the retry replays the first answer', async () => {
    const owner = await createAgent(test);
    const key = crypto.randomUUID();
    const body = {
      title: 'Once',
      description: 'Only once',
      category: 'data',
      capability_type: 'tool',
      pricing_model: 'per_use',
      price_ut: '1.00',
      callback_url: 'https://seller.example/callback',
    };
    const first = await test.http.post('/api/v1/capabilities').set(owner.headers).set('Idempotency-Key', key).send(body).expect(201);
    const retry = await test.http.post('/api/v1/capabilities').set(owner.headers).set('Idempotency-Key', key).send(body).expect(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data.id).toBe(first.body.data.id);
    const rows = await test.runtime.database.db('capabilities').where({ owner_user_id: owner.userId });
    expect(rows).toHaveLength(1);
  });
});

describe('the callback secret', () => {
  it('is shown in the create answer only: never by a read', async () => {
    const created = await post(agent.headers, valid).expect(201);
    expect(created.body.data.callback_secret).toMatch(/^cbs_[A-Za-z0-9_-]{43}$/);
    const read = await getCapability(agent.headers, created.body.data.id).expect(200);
    expect(read.body.data).not.toHaveProperty('callback_secret');
    expect(JSON.stringify(read.body)).not.toContain(created.body.data.callback_secret);
  });

  it('differs between capabilities', async () => {
    const [first, second] = await Promise.all([post(agent.headers, valid).expect(201), post(agent.headers, valid).expect(201)]);
    expect(first.body.data.callback_secret).not.toBe(second.body.data.callback_secret);
  });

  it('is replaced by its owner: the answer shows the new secret, reads still show none', async () => {
    const created = await post(agent.headers, valid).expect(201);
    const rotated = await rotate(agent.headers, created.body.data.id).expect(200);
    expect(rotated.body.data.capability_id).toBe(created.body.data.id);
    expect(rotated.body.data.callback_secret).toMatch(/^cbs_/);
    expect(rotated.body.data.callback_secret).not.toBe(created.body.data.callback_secret);
    expect(Date.parse(rotated.body.data.rotated_at)).not.toBeNaN();
    expect((await getCapability(agent.headers, created.body.data.id).expect(200)).body.data).not.toHaveProperty('callback_secret');
  });

  it('cannot be rotated by another user of the same space (4030) nor seen from the other space (4040)', async () => {
    const created = await post(agent.headers, valid).expect(201);
    const other = await createAgent(test);
    expect((await rotate(other.headers, created.body.data.id).expect(403)).body.code).toBe(4030);
    expect((await rotate(human.headers, created.body.data.id).expect(404)).body.code).toBe(4040);
  });

  it('answers 4040 for an unknown capability and 4000 for an id that is not a UUID', async () => {
    expect((await rotate(agent.headers, randomUUID()).expect(404)).body.code).toBe(4040);
    expect((await rotate(agent.headers, 'nope').expect(400)).body.code).toBe(4000);
  });
});
