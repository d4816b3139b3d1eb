import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, admin, balance, buy, createCapability, credit } from '../helpers/market.ts';

let test: TestApp;
type Headers = Record<string, string>;
type Agent = Actor & { apiKey: string; apiKeyId: string };
type Human = Actor & { token: string };
interface TransactionItem {
  id: string;
  status: string;
  buyer_user_id: string;
  seller_user_id: string;
  currency: string;
  created_at: string;
}

/** One user reachable both ways: as an agent (API key) and as a human (its own bearer token). */
interface DualUser {
  userId: string;
  asAgent: Agent;
  asHuman: Human;
}

async function dualUser(): Promise<DualUser> {
  const human = await signUpHuman(test);
  const key = await createApiKey(test);
  await linkUser(test, key.id, human.userId);
  const asAgent = { userId: human.userId, apiKey: key.api_key, apiKeyId: key.id, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': human.userId } };
  return { userId: human.userId, asAgent, asHuman: human };
}

const transactionsPath = '/api/v1/transactions';
const create = (headers: Headers, body: unknown, key: string | null = randomUUID()) => {
  const request = test.http.post(transactionsPath).set(headers);
  if (key) request.set('Idempotency-Key', key);
  return request.send(body as object);
};
const getOne = (headers: Headers, id: string) => test.http.get(`${transactionsPath}/${id}`).set(headers);
const list = (headers: Headers, query: Record<string, string | number> = {}) => test.http.get(transactionsPath).set(headers).query(query);
const resolve = (headers: Headers, id: string, body: unknown) =>
  test.http
    .post(`/api/v1/admin/transactions/${id}/resolve`)
    .set(headers)
    .send(body as object);
const status = async (actor: Actor, id: string) => (await getOne(actor.headers, id).expect(200)).body.data.status as string;

const actions = ['freeze', 'accept', 'reject', 'deliver', 'confirm', 'cancel', 'dispute'] as const;
/** The smallest body each action accepts, so that only the caller decides the answer. */
const bodyOf = (action: string) => (action === 'deliver' ? { result_payload: { ok: true } } : undefined);

// The shared cast: an agent buyer who is also a human (same user id), an agent seller, a stranger
// agent, an unrelated human, and one agent-space transaction in pending_freeze.
let buyer: DualUser;
let seller: Agent;
let stranger: Agent;
let otherHuman: Human;
let capabilityId: string;
let pending: { id: string };

beforeAll(async () => {
  test = await startTestApp();
  buyer = await dualUser();
  seller = await createAgent(test);
  stranger = await createAgent(test);
  otherHuman = await signUpHuman(test);
  await credit(test, buyer.userId, '1000.00');
  capabilityId = (await createCapability(test, seller, { price_ut: '10.00' })).id;
  pending = await buy(test, buyer.asAgent, capabilityId);
});
afterAll(() => test.close());

interface Endpoint {
  name: string;
  method: 'get' | 'post';
  path(id: string): string;
  body?: () => object | undefined;
}

const endpoints: Endpoint[] = [
  { name: 'POST /transactions', method: 'post', path: () => transactionsPath, body: () => ({ capability_id: capabilityId }) },
  ...actions.map((action): Endpoint => ({
    name: `POST /transactions/{id}/${action}`,
    method: 'post',
    path: (id) => `${transactionsPath}/${id}/${action}`,
    body: () => bodyOf(action),
  })),
  { name: 'GET /transactions', method: 'get', path: () => transactionsPath },
  { name: 'GET /transactions/{id}', method: 'get', path: (id) => `${transactionsPath}/${id}` },
];
const onTransaction = endpoints.filter((endpoint) => endpoint.path('ID').includes('ID'));

function call(endpoint: Endpoint, headers: Headers, id = pending.id) {
  const request = test.http[endpoint.method](endpoint.path(id)).set(headers).set('Idempotency-Key', randomUUID());
  const body = endpoint.body?.();
  return body ? request.send(body) : request;
}

describe('transactions: who may call', () => {
  it.each(endpoints)('$name without credentials is 4010', async (endpoint) => {
    const response = await call(endpoint, {}).expect(401);
    expect(response.body).toMatchObject({ code: 4010, message: 'unauthenticated' });
  });

  it.each(endpoints)('$name with a bad bearer token is 4010', async (endpoint) => {
    expect((await call(endpoint, { Authorization: 'Bearer x.y.z' }).expect(401)).body.code).toBe(4010);
  });

  it.each(endpoints)('$name with an API key acting for an unlinked user is 4010', async (endpoint) => {
    expect((await call(endpoint, { 'X-Api-Key': seller.apiKey, 'X-Platform-User-Id': otherHuman.userId }).expect(401)).body.code).toBe(4010);
  });

  it.each(endpoints)('$name with mixed credentials is 4011', async (endpoint) => {
    const response = await call(endpoint, { ...buyer.asAgent.headers, ...buyer.asHuman.headers }).expect(400);
    expect(response.body).toMatchObject({ code: 4011, message: 'mixed_credentials' });
  });

  it.each(onTransaction)('$name by a stranger agent is 4040, never 4030', async (endpoint) => {
    const response = await call(endpoint, stranger.headers).expect(404);
    expect(response.body.code).toBe(4040);
  });

  it.each(onTransaction)('$name by an unrelated human is 4040', async (endpoint) => {
    expect((await call(endpoint, otherHuman.headers).expect(404)).body.code).toBe(4040);
  });

  it.each(onTransaction)('$name by the buyer itself acting as a human (the other space) is 4040', async (endpoint) => {
    expect((await call(endpoint, buyer.asHuman.headers).expect(404)).body.code).toBe(4040);
  });

  it.each(onTransaction)('$name on an unknown id is 4040', async (endpoint) => {
    expect((await call(endpoint, buyer.asAgent.headers, randomUUID()).expect(404)).body.code).toBe(4040);
  });

  it.each(onTransaction)('$name on an id that is not a UUID is 4000', async (endpoint) => {
    const response = await call(endpoint, buyer.asAgent.headers, 'not-a-uuid').expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors).toEqual([{ path: 'params.tx_id', message: expect.any(String) }]);
  });

  it('leaves the transaction untouched after all those refused calls', async () => {
    expect(await status(buyer.asAgent, pending.id)).toBe('pending_freeze');
    expect(await balance(test, buyer.asAgent)).toMatchObject({ available: '1000.00', frozen: '0.00' });
  });

  it.each([
    ['the seller freezing', 'seller', 'freeze'],
    ['the seller cancelling', 'seller', 'cancel'],
    ['the seller confirming', 'seller', 'confirm'],
    ['the seller disputing', 'seller', 'dispute'],
    ['the buyer accepting', 'buyer', 'accept'],
    ['the buyer rejecting', 'buyer', 'reject'],
    ['the buyer delivering', 'buyer', 'deliver'],
  ] as const)('refuses %s with 4030 (the wrong party)', async (_name, party, action) => {
    const actor = party === 'buyer' ? buyer.asAgent : seller;
    const response = await act(test, actor, pending.id, action, bodyOf(action)).expect(403);
    expect(response.body).toMatchObject({ code: 4030, message: 'forbidden' });
    expect(await status(buyer.asAgent, pending.id)).toBe('pending_freeze');
  });

  it('refuses the wrong party with 4030 even when the state would also refuse the action', async () => {
    const tx = await buy(test, buyer.asAgent, capabilityId);
    await act(test, buyer.asAgent, tx.id, 'freeze').expect(200);
    await act(test, seller, tx.id, 'accept').expect(200);
    await act(test, seller, tx.id, 'deliver', { result_payload: {} }).expect(200);
    expect((await act(test, seller, tx.id, 'confirm').expect(403)).body.code).toBe(4030);
    expect((await act(test, buyer.asAgent, tx.id, 'accept').expect(403)).body.code).toBe(4030);
    expect(await status(seller, tx.id)).toBe('delivered');
  });

  it.each([
    ['confirm', 'buyer'],
    ['dispute', 'buyer'],
    ['accept', 'seller'],
    ['reject', 'seller'],
    ['deliver', 'seller'],
  ] as const)('refuses %s by the right party from pending_freeze with 4090 {status, action}', async (action, party) => {
    const actor = party === 'buyer' ? buyer.asAgent : seller;
    const response = await act(test, actor, pending.id, action, bodyOf(action)).expect(409);
    expect(response.body).toMatchObject({ code: 4090, message: 'invalid_state_transition', data: { status: 'pending_freeze', action } });
  });

  it('answers 4010, not 4000, to an anonymous caller with a bad path id', async () => {
    expect((await test.http.get(`${transactionsPath}/not-a-uuid`).expect(401)).body.code).toBe(4010);
    expect((await test.http.post(`${transactionsPath}/not-a-uuid/freeze`).expect(401)).body.code).toBe(4010);
  });

  it('hides a human-space transaction from the same user calling as an agent', async () => {
    const humanSeller = await signUpHuman(test);
    const humanCapability = await createCapability(test, humanSeller);
    const tx = await buy(test, buyer.asHuman, humanCapability.id);
    expect((await getOne(buyer.asHuman.headers, tx.id).expect(200)).body.data.currency).toBe('CNY');
    expect((await getOne(buyer.asAgent.headers, tx.id).expect(404)).body.code).toBe(4040);
    expect((await act(test, buyer.asAgent, tx.id, 'cancel').expect(404)).body.code).toBe(4040);
    expect((await act(test, humanSeller, tx.id, 'accept').expect(409)).body.data).toEqual({ status: 'pending_freeze', action: 'accept' });
  });

  it('treats an id written in uppercase as the same transaction', async () => {
    const tx = await buy(test, buyer.asAgent, capabilityId);
    expect((await getOne(seller.headers, tx.id.toUpperCase()).expect(200)).body.data.id).toBe(tx.id);
    expect((await act(test, buyer.asAgent, tx.id.toUpperCase(), 'freeze').expect(200)).body.data).toMatchObject({ id: tx.id, status: 'frozen' });
    expect((await act(test, buyer.asAgent, tx.id.toUpperCase(), 'cancel').expect(200)).body.data.status).toBe('cancelled_by_buyer');
  });

  it('lets both parties read the transaction, and only them', async () => {
    expect((await getOne(buyer.asAgent.headers, pending.id).expect(200)).body.data.id).toBe(pending.id);
    expect((await getOne(seller.headers, pending.id).expect(200)).body.data.id).toBe(pending.id);
  });
});

describe('POST /api/v1/transactions/{id}/deliver: bad bodies', () => {
  let accepted: { id: string };
  beforeAll(async () => {
    accepted = await buy(test, buyer.asAgent, capabilityId);
    await act(test, buyer.asAgent, accepted.id, 'freeze').expect(200);
    await act(test, seller, accepted.id, 'accept').expect(200);
  });
  const deliver = (body: unknown) =>
    test.http
      .post(`${transactionsPath}/${accepted.id}/deliver`)
      .set(seller.headers)
      .send(body as object);

  it.each([
    ['no result_payload', {}, 'body.result_payload'],
    ['a string result_payload', { result_payload: 'done' }, 'body.result_payload'],
    ['a number result_payload', { result_payload: 42 }, 'body.result_payload'],
    ['an array result_payload', { result_payload: [1, 2, 3] }, 'body.result_payload'],
    ['a null result_payload', { result_payload: null }, 'body.result_payload'],
    ['a result_payload over 256 KiB', { result_payload: { blob: 'x'.repeat(256 * 1024) } }, 'body.result_payload'],
    ['an unknown field', { result_payload: {}, signature: 'abc' }, 'body'],
  ])('refuses %s with 4000', async (_name, body, path) => {
    const response = await deliver(body).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('refuses a body that is not JSON with 4001', async () => {
    const response = await test.http
      .post(`${transactionsPath}/${accepted.id}/deliver`)
      .set(seller.headers)
      .set('Content-Type', 'application/json')
      .send('{"result_payload": {')
      .expect(400);
    expect(response.body).toMatchObject({ code: 4001, message: 'invalid_json' });
  });

  it.each([
    ['no body at all', undefined],
    ['a JSON array', [{ result_payload: {} }]],
  ])('refuses %s with 4001 (a JSON object is required)', async (_name, body) => {
    const request = test.http.post(`${transactionsPath}/${accepted.id}/deliver`).set(seller.headers);
    const response = await (body === undefined ? request : request.send(body)).expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('refuses a body over the 1 MiB request limit with 4130', async () => {
    const response = await deliver({ result_payload: { blob: 'x'.repeat(1024 * 1024 + 10) } }).expect(413);
    expect(response.body.code).toBe(4130);
  });

  it('still delivers afterwards, and accepts a payload just under 256 KiB', async () => {
    expect(await status(seller, accepted.id)).toBe('accepted');
    const payload = { blob: 'y'.repeat(256 * 1024 - 20) };
    expect(Buffer.byteLength(JSON.stringify(payload))).toBeLessThanOrEqual(256 * 1024);
    const response = await deliver({ result_payload: payload }).expect(200);
    expect(response.body.data.status).toBe('delivered');
    expect(response.body.data.result_payload.blob).toHaveLength(payload.blob.length);
  });
});

describe('party actions: bad bodies', () => {
  it.each(['freeze', 'accept', 'reject', 'confirm', 'cancel', 'dispute'])('%s refuses an unknown body field with 4000', async (action) => {
    const party = ['accept', 'reject'].includes(action) ? seller : buyer.asAgent;
    const response = await act(test, party, pending.id, action, { surprise: 1 }).expect(400);
    expect(response.body.code).toBe(4000);
  });

  it.each(['freeze', 'cancel', 'dispute'])('%s refuses a body that is not JSON with 4001', async (action) => {
    const response = await test.http
      .post(`${transactionsPath}/${pending.id}/${action}`)
      .set(buyer.asAgent.headers)
      .set('Content-Type', 'application/json')
      .send('nope')
      .expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('accepts an empty JSON object as the body of a bodiless action', async () => {
    const tx = await buy(test, buyer.asAgent, capabilityId);
    expect((await act(test, buyer.asAgent, tx.id, 'cancel', {}).expect(200)).body.data.status).toBe('cancelled_by_buyer');
  });

  it('refuses an empty dispute reason with 4000', async () => {
    const response = await act(test, buyer.asAgent, pending.id, 'dispute', { reason: '   ' }).expect(400);
    expect(response.body.code).toBe(4000);
  });
});

describe('POST /api/v1/transactions: bad requests', () => {
  it.each([
    ['a capability_id that is not a UUID', { capability_id: 'cap-1' }, 'body.capability_id'],
    ['no capability_id', { capability_id: undefined }, 'body.capability_id'],
    ['a demand_id that is not a UUID', { demand_id: 'demand-1' }, 'body.demand_id'],
    ['a context_id that is not a UUID', { context_id: 'ctx' }, 'body.context_id'],
    ['booked_hours 0', { booked_hours: 0 }, 'body.booked_hours'],
    ['negative booked_hours', { booked_hours: -3 }, 'body.booked_hours'],
    ['fractional booked_hours', { booked_hours: 1.5 }, 'body.booked_hours'],
    ['booked_hours as a string', { booked_hours: '3' }, 'body.booked_hours'],
    ['booked_hours over a year', { booked_hours: 24 * 365 + 1 }, 'body.booked_hours'],
    ['an unknown field', { price_ut: '0.01' }, 'body'],
    ['a buyer set in the request', { buyer_user_id: randomUUID() }, 'body'],
  ])('refuses %s with 4000', async (_name, override, path) => {
    const response = await create(buyer.asAgent.headers, { capability_id: capabilityId, ...override }).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('refuses a body that is not JSON with 4001', async () => {
    const response = await test.http
      .post(transactionsPath)
      .set(buyer.asAgent.headers)
      .set('Idempotency-Key', randomUUID())
      .set('Content-Type', 'application/json')
      .send('{capability_id}')
      .expect(400);
    expect(response.body.code).toBe(4001);
  });

  it.each([
    ['an Idempotency-Key over 64 characters', { 'Idempotency-Key': 'k'.repeat(65) }, {}],
    ['an Idempotency-Key with spaces', { 'Idempotency-Key': 'two words' }, {}],
    ['a body idempotency_key that differs from the header', { 'Idempotency-Key': 'key-one' }, { idempotency_key: 'key-two' }],
  ])('refuses %s with 4000', async (_name, headers, extra) => {
    const response = await test.http
      .post(transactionsPath)
      .set(buyer.asAgent.headers)
      .set(headers)
      .send({ capability_id: capabilityId, ...extra })
      .expect(400);
    expect(response.body.code).toBe(4000);
  });

  it('accepts the key in the body instead of the header', async () => {
    const response = await create(buyer.asAgent.headers, { capability_id: capabilityId, idempotency_key: randomUUID() }, null).expect(201);
    expect(response.body.data.status).toBe('pending_freeze');
  });

  it('refuses an agent without an Idempotency-Key with 4000', async () => {
    const response = await create(buyer.asAgent.headers, { capability_id: capabilityId }, null).expect(400);
    expect(response.body.code).toBe(4000);
  });

  it('answers 4040 for an unknown capability', async () => {
    expect((await create(buyer.asAgent.headers, { capability_id: randomUUID() }).expect(404)).body.code).toBe(4040);
  });

  it('answers 4040 for a capability of the other space, in both directions', async () => {
    const humanSeller = await signUpHuman(test);
    const humanCapability = await createCapability(test, humanSeller);
    expect((await create(buyer.asAgent.headers, { capability_id: humanCapability.id }).expect(404)).body.code).toBe(4040);
    expect((await create(buyer.asHuman.headers, { capability_id: capabilityId }, null).expect(404)).body.code).toBe(4040);
  });

  it('answers 4030 for buying your own capability', async () => {
    const response = await create(seller.headers, { capability_id: capabilityId }).expect(403);
    expect(response.body.code).toBe(4030);
  });

  it.each(['per_hour', 'per_day'])('refuses a %s purchase without booked_hours with 4000', async (pricingModel) => {
    const capability = await createCapability(test, seller, { pricing_model: pricingModel, price_ut: '5.00' });
    const response = await create(buyer.asAgent.headers, { capability_id: capability.id }).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain('body.booked_hours');
  });

  it('lets a human buy without an Idempotency-Key, in CNY', async () => {
    const humanSeller = await signUpHuman(test);
    const humanCapability = await createCapability(test, humanSeller, { price_ut: '3.00' });
    const data = (await create(buyer.asHuman.headers, { capability_id: humanCapability.id }, null).expect(201)).body.data;
    expect(data).toMatchObject({ status: 'pending_freeze', currency: 'CNY', buyer_user_id: buyer.userId, price_ut: '3.00' });
  });
});

describe('POST /api/v1/transactions: the price', () => {
  it.each([
    ['per_hour', '7.50', 3, '22.50'],
    ['per_hour', '7.50', 1, '7.50'],
    ['per_day', '100.00', 1, '100.00'],
    ['per_day', '100.00', 24, '100.00'],
    ['per_day', '100.00', 25, '200.00'],
    ['per_day', '100.00', 48, '200.00'],
    ['per_day', '100.00', 49, '300.00'],
    ['per_use', '10.00', undefined, '10.00'],
    ['per_query', '0.25', undefined, '0.25'],
    ['subscription', '99.99', undefined, '99.99'],
  ] as const)('%s at %s with booked_hours %s costs %s', async (pricingModel, price, bookedHours, expected) => {
    const extra = pricingModel === 'per_query' ? { callback_url: 'https://example.com/run' } : {};
    const capability = await createCapability(test, seller, { pricing_model: pricingModel, price_ut: price, ...extra });
    const body = bookedHours === undefined ? { capability_id: capability.id } : { capability_id: capability.id, booked_hours: bookedHours };
    const data = (await create(buyer.asAgent.headers, body).expect(201)).body.data;
    expect(data).toMatchObject({
      price_ut: expected,
      transaction_type: pricingModel,
      booked_hours: bookedHours ?? null,
      status: 'pending_freeze',
      currency: 'UT',
    });
  });

  // booked_hours also sets the delivery deadline; where it does not set the price, a buyer could
  // use it only to shorten the seller's time to deliver.
  it.each([['per_use'], ['per_query'], ['subscription']] as const)('refuses booked_hours on a %s capability with 4000', async (pricingModel) => {
    const extra = pricingModel === 'per_query' ? { callback_url: 'https://example.com/run' } : {};
    const capability = await createCapability(test, seller, { pricing_model: pricingModel, price_ut: '10.00', ...extra });
    const response = await create(buyer.asAgent.headers, { capability_id: capability.id, booked_hours: 1 }).expect(400);
    expect(response.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.booked_hours' }] } });
  });
});

describe('POST /api/v1/transactions/{id}/freeze: insufficient balance', () => {
  it('answers 402 4020 with {currency, available, required} and changes nothing', async () => {
    const poor = await createAgent(test);
    await credit(test, poor.userId, '5.00');
    const tx = await buy(test, poor, capabilityId);
    const response = await act(test, poor, tx.id, 'freeze').expect(402);
    expect(response.body).toMatchObject({ code: 4020, message: 'insufficient_balance', data: { currency: 'UT', available: '5.00', required: '10.00' } });
    expect(await balance(test, poor)).toEqual({ available: '5.00', frozen: '0.00', total: '5.00', currency: 'UT' });
    expect(await status(poor, tx.id)).toBe('pending_freeze');
    const history = (await test.http.get('/api/v1/wallet/transactions').set(poor.headers).expect(200)).body.data;
    expect(history.items.map((item: { type: string }) => item.type)).toEqual(['deposit']);

    // Topped up, the same purchase freezes.
    await credit(test, poor.userId, '5.00');
    expect((await act(test, poor, tx.id, 'freeze').expect(200)).body.data.status).toBe('frozen');
    expect(await balance(test, poor)).toEqual({ available: '0.00', frozen: '10.00', total: '10.00', currency: 'UT' });
  });

  it('reports CNY for a human buyer', async () => {
    const humanBuyer = await signUpHuman(test);
    const humanSeller = await signUpHuman(test);
    await credit(test, humanBuyer.userId, '1.50', 'CNY');
    await credit(test, humanBuyer.userId, '500.00', 'UT');
    const capability = await createCapability(test, humanSeller, { price_ut: '2.00' });
    const tx = await buy(test, humanBuyer, capability.id);
    const response = await act(test, humanBuyer, tx.id, 'freeze').expect(402);
    expect(response.body).toMatchObject({ code: 4020, data: { currency: 'CNY', available: '1.50', required: '2.00' } });
    expect(await balance(test, humanBuyer, 'cash')).toMatchObject({ available: '1.50', frozen: '0.00' });
  });
});

describe('POST /api/v1/admin/transactions/{id}/resolve', () => {
  let disputed: { id: string };
  let delivered: { id: string };
  beforeAll(async () => {
    const deliveredOne = async () => {
      const tx = await buy(test, buyer.asAgent, capabilityId);
      await act(test, buyer.asAgent, tx.id, 'freeze').expect(200);
      await act(test, seller, tx.id, 'accept').expect(200);
      await act(test, seller, tx.id, 'deliver', { result_payload: { v: 1 } }).expect(200);
      return tx;
    };
    disputed = await deliveredOne();
    await act(test, buyer.asAgent, disputed.id, 'dispute', { reason: 'wrong language' }).expect(200);
    delivered = await deliveredOne();
  });

  it.each([
    ['no credentials', {}],
    ['a wrong admin token', { 'X-Admin-Token': 'not-the-admin-token-at-all' }],
    ["the buyer's API key", 'buyer'],
    ["the seller's API key", 'seller'],
    ["the buyer's bearer token", 'human'],
    ['mixed user credentials', 'mixed'],
  ] as const)('refuses %s with 4010 (only X-Admin-Token counts)', async (_name, who) => {
    const headers: Headers =
      who === 'buyer'
        ? buyer.asAgent.headers
        : who === 'seller'
          ? seller.headers
          : who === 'human'
            ? buyer.asHuman.headers
            : who === 'mixed'
              ? { ...buyer.asAgent.headers, ...buyer.asHuman.headers }
              : who;
    const response = await resolve(headers, disputed.id, { outcome: 'settle' }).expect(401);
    expect(response.body.code).toBe(4010);
    expect(await status(seller, disputed.id)).toBe('disputed');
  });

  it.each([
    ['an unknown outcome', { outcome: 'split' }],
    ['no outcome', {}],
    ['an unknown field', { outcome: 'settle', winner: 'seller' }],
  ])('refuses %s with 4000', async (_name, body) => {
    const response = await resolve(admin, disputed.id, body).expect(400);
    expect(response.body.code).toBe(4000);
  });

  it('refuses a body that is not JSON with 4001', async () => {
    const response = await test.http
      .post(`/api/v1/admin/transactions/${disputed.id}/resolve`)
      .set(admin)
      .set('Content-Type', 'application/json')
      .send('settle')
      .expect(400);
    expect(response.body.code).toBe(4001);
  });

  it('answers 4000 for an id that is not a UUID and 4040 for an unknown one', async () => {
    expect((await resolve(admin, 'nope', { outcome: 'settle' }).expect(400)).body.code).toBe(4000);
    expect((await resolve(admin, randomUUID(), { outcome: 'settle' }).expect(404)).body.code).toBe(4040);
  });

  it.each(['settle', 'refund'])('refuses to %s a transaction that is not disputed with 4090', async (outcome) => {
    const response = await resolve(admin, delivered.id, { outcome }).expect(409);
    expect(response.body).toMatchObject({ code: 4090, data: { status: 'delivered', action: expect.stringContaining(outcome) } });
    expect(await status(seller, delivered.id)).toBe('delivered');
    expect((await resolve(admin, pending.id, { outcome }).expect(409)).body.data.status).toBe('pending_freeze');
  });

  it('settles a dispute for the seller, after which it is no longer resolvable', async () => {
    const before = await balance(test, seller);
    const response = await resolve(admin, disputed.id, { outcome: 'settle' }).expect(200);
    expect(response.body.data.status).toBe('settled');
    expect(Number((await balance(test, seller)).available) - Number(before.available)).toBe(10);
    expect((await resolve(admin, disputed.id, { outcome: 'refund' }).expect(409)).body).toMatchObject({ code: 4090, data: { status: 'settled' } });
  });

  it('refunds a dispute to the buyer', async () => {
    const refundBuyer = await createAgent(test);
    await credit(test, refundBuyer.userId, '10.00');
    const tx = await buy(test, refundBuyer, capabilityId);
    await act(test, refundBuyer, tx.id, 'freeze').expect(200);
    await act(test, seller, tx.id, 'accept').expect(200);
    await act(test, seller, tx.id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, refundBuyer, tx.id, 'dispute').expect(200);
    expect((await resolve(admin, tx.id, { outcome: 'refund' }).expect(200)).body.data.status).toBe('refunded');
    expect(await balance(test, refundBuyer)).toEqual({ available: '10.00', frozen: '0.00', total: '10.00', currency: 'UT' });
  });
});

describe('GET /api/v1/transactions', () => {
  // A fresh cast: `me` buys three times, sells twice, and buys once as a human; others trade too.
  let me: DualUser;
  let mySeller: Agent;
  let myBuyer: Agent;
  let bought: string[];
  let sold: string[];
  let humanSpace: string;
  let agentSpaceNewestFirst: string[];

  beforeAll(async () => {
    me = await dualUser();
    mySeller = await createAgent(test);
    myBuyer = await createAgent(test);
    await credit(test, me.userId, '100.00');
    await credit(test, me.userId, '100.00', 'CNY');
    await credit(test, myBuyer.userId, '100.00');
    const theirs = await createCapability(test, mySeller, { price_ut: '1.00' });
    const mine = await createCapability(test, me.asAgent, { price_ut: '2.00' });
    const humanSeller = await signUpHuman(test);
    const humanCapability = await createCapability(test, humanSeller, { price_ut: '3.00' });
    // The clock moves a second between purchases so that "newest first" is unambiguous.
    const step = () => test.clock.advanceMs(1000);
    bought = [];
    sold = [];
    for (let index = 0; index < 3; index++) {
      step();
      bought.push((await buy(test, me.asAgent, theirs.id)).id);
    }
    for (let index = 0; index < 2; index++) {
      step();
      sold.push((await buy(test, myBuyer, mine.id)).id);
    }
    step();
    humanSpace = (await buy(test, me.asHuman, humanCapability.id)).id;
    // Noise: transactions that do not involve `me`.
    step();
    await buy(test, myBuyer, theirs.id);
    await act(test, me.asAgent, bought[0]!, 'freeze').expect(200);
    agentSpaceNewestFirst = [...bought, ...sold].reverse();
  });

  const ids = (items: TransactionItem[]) => items.map((item) => item.id);

  it('lists all of the caller’s own transactions of its own space, newest first', async () => {
    const data = (await list(me.asAgent.headers).expect(200)).body.data;
    expect(data).toMatchObject({ total: 5, page: 1, page_size: 20, has_more: false, next_cursor: null });
    expect(ids(data.items)).toEqual(agentSpaceNewestFirst);
    for (const item of data.items as TransactionItem[]) expect(item.currency).toBe('UT');
  });

  it('lists only the human-space transactions to the same user calling as a human', async () => {
    const data = (await list(me.asHuman.headers).expect(200)).body.data;
    expect(data.total).toBe(1);
    expect(ids(data.items)).toEqual([humanSpace]);
    expect(data.items[0].currency).toBe('CNY');
  });

  it('filters by role', async () => {
    const asBuyer = (await list(me.asAgent.headers, { role: 'buyer' }).expect(200)).body.data;
    expect(ids(asBuyer.items)).toEqual([...bought].reverse());
    expect(asBuyer.total).toBe(3);
    for (const item of asBuyer.items as TransactionItem[]) expect(item.buyer_user_id).toBe(me.userId);
    const asSeller = (await list(me.asAgent.headers, { role: 'seller' }).expect(200)).body.data;
    expect(ids(asSeller.items)).toEqual([...sold].reverse());
    for (const item of asSeller.items as TransactionItem[]) expect(item.seller_user_id).toBe(me.userId);
    const everything = (await list(me.asAgent.headers, { role: '' }).expect(200)).body.data;
    expect(ids(everything.items)).toEqual(agentSpaceNewestFirst);
  });

  it('filters by status, alone and with a role', async () => {
    const frozen = (await list(me.asAgent.headers, { status: 'frozen' }).expect(200)).body.data;
    expect(ids(frozen.items)).toEqual([bought[0]]);
    expect(frozen.total).toBe(1);
    const pendingSales = (await list(me.asAgent.headers, { status: 'pending_freeze', role: 'seller' }).expect(200)).body.data;
    expect(pendingSales.total).toBe(2);
    expect((await list(me.asAgent.headers, { status: 'settled' }).expect(200)).body.data).toMatchObject({ items: [], total: 0, has_more: false });
  });

  it('shows a stranger none of them', async () => {
    const data = (await list(stranger.headers).expect(200)).body.data;
    for (const id of [...bought, ...sold, humanSpace]) expect(ids(data.items)).not.toContain(id);
  });

  it('pages with page and page_size, reporting total and has_more', async () => {
    const pages = [];
    for (const page of [1, 2, 3, 4]) pages.push((await list(me.asAgent.headers, { page, page_size: 2 }).expect(200)).body.data);
    expect(pages.map((page) => [page.page, page.page_size, page.total, page.has_more, page.items.length])).toEqual([
      [1, 2, 5, true, 2],
      [2, 2, 5, true, 2],
      [3, 2, 5, false, 1],
      [4, 2, 5, false, 0],
    ]);
    expect(pages.flatMap((page) => ids(page.items))).toEqual(agentSpaceNewestFirst);
  });

  it('walks every transaction exactly once with next_cursor', async () => {
    for (const pageSize of [1, 2, 3, 5]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: Record<string, string | number> = cursor ? { page_size: pageSize, cursor } : { page_size: pageSize };
        const data = (await list(me.asAgent.headers, query).expect(200)).body.data;
        expect(data.total).toBe(5);
        seen.push(...ids(data.items));
        cursor = data.next_cursor;
        expect(data.has_more).toBe(cursor !== null);
      } while (cursor);
      expect(seen).toEqual(agentSpaceNewestFirst);
    }
  });

  it('keeps a cursor walk stable when a transaction is inserted between pages', async () => {
    const walker = await createAgent(test);
    await credit(test, walker.userId, '100.00');
    const offer = await createCapability(test, seller, { price_ut: '1.00' });
    const original: string[] = [];
    for (let index = 0; index < 5; index++) {
      test.clock.advanceMs(1000);
      original.unshift((await buy(test, walker, offer.id)).id);
    }
    const first = (await list(walker.headers, { page_size: 2 }).expect(200)).body.data;
    test.clock.advanceMs(1000);
    const inserted = (await buy(test, walker, offer.id)).id;
    const seen = ids(first.items);
    let cursor: string | null = first.next_cursor;
    while (cursor) {
      const data = (await list(walker.headers, { page_size: 2, cursor }).expect(200)).body.data;
      seen.push(...ids(data.items));
      cursor = data.next_cursor;
    }
    expect(seen).toEqual(original);
    expect(new Set(seen).size).toBe(seen.length);
    expect(ids((await list(walker.headers, { page_size: 100 }).expect(200)).body.data.items)).toEqual([inserted, ...original]);
  });

  it('combines the cursor with filters', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: Record<string, string | number> = { role: 'buyer', page_size: 1, ...(cursor ? { cursor } : {}) };
      const data = (await list(me.asAgent.headers, query).expect(200)).body.data;
      seen.push(...ids(data.items));
      cursor = data.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...bought].reverse());
  });

  it.each([
    ['page_size 0', { page_size: 0 }, 'query.page_size'],
    ['page_size 101', { page_size: 101 }, 'query.page_size'],
    ['a non-numeric page_size', { page_size: 'ten' }, 'query.page_size'],
    ['page 0', { page: 0 }, 'query.page'],
    ['a negative page', { page: -2 }, 'query.page'],
    ['an unknown role', { role: 'admin' }, 'query.role'],
    ['an unknown status', { status: 'lost' }, 'query.status'],
    ['a cursor that is not one', { cursor: 'garbage!' }, 'query.cursor'],
    ['a wallet history cursor', { cursor: Buffer.from(JSON.stringify(['42'])).toString('base64url') }, 'query.cursor'],
    ['a cursor with a bad timestamp', { cursor: Buffer.from(JSON.stringify(['yesterday', randomUUID()])).toString('base64url') }, 'query.cursor'],
    ['a cursor with a bad id', { cursor: Buffer.from(JSON.stringify(['2024-01-01T00:00:00.000Z', "x' OR 1=1"])).toString('base64url') }, 'query.cursor'],
    [
      'a cursor with an impossible date',
      { cursor: Buffer.from(JSON.stringify(['2024-13-45T25:61:61.000Z', randomUUID()])).toString('base64url') },
      'query.cursor',
    ],
  ])('refuses %s with 4000', async (_name, query, path) => {
    const response = await list(me.asAgent.headers, query).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('accepts page_size 1 and 100', async () => {
    expect((await list(me.asAgent.headers, { page_size: 1 }).expect(200)).body.data).toMatchObject({ page_size: 1, has_more: true });
    expect((await list(me.asAgent.headers, { page_size: 100 }).expect(200)).body.data).toMatchObject({ page_size: 100, has_more: false });
  });
});
