import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicAnd } from '../../src/callbacks/addresses.ts';
import type { Resolver } from '../../src/callbacks/client.ts';
import { verifySignature } from '../../src/callbacks/signing.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { act, agentMarket, balance, credit } from '../helpers/market.ts';
import { listen, openEventSource } from '../helpers/server.ts';

/**
 * POST /api/v1/capabilities/{id}/invoke against a real callback server on 127.0.0.1. The guard
 * here trusts exactly 127.0.0.0/8 besides public addresses (publicAnd), so the same app shows both
 * that loopback callbacks work and that every other internal address (10/8 behind a redirect or a
 * DNS answer) is refused. A 5 % platform fee shows the split: 2.00 pays the seller 1.90.
 */
type Callbacks = Awaited<ReturnType<typeof startCallbackServer>>;
let callbacks: Callbacks;

const resolver: Resolver = async (hostname) => {
  if (hostname === 'callback.invoke.test') return [{ address: '127.0.0.1', family: 4 }];
  if (hostname === 'internal.invoke.test') return [{ address: '10.0.0.7', family: 4 }];
  // A rebinding-style answer: one allowed address, one internal one.
  if (hostname === 'mixed.invoke.test')
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '10.0.0.8', family: 4 },
    ];
  throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
};

beforeAll(async () => {
  callbacks = await startCallbackServer();
});
afterAll(() => callbacks.close());

function invoke(
  test: TestApp,
  buyer: Actor,
  capabilityId: string,
  body: Record<string, unknown> = { input: { q: 'hello' } },
  key: string | null = randomUUID(),
) {
  const request = test.http.post(`/api/v1/capabilities/${capabilityId}/invoke`).set(buyer.headers);
  return (key === null ? request : request.set('Idempotency-Key', key)).send(body);
}

async function perQueryMarket(test: TestApp, callbackUrl: string, overrides: Record<string, unknown> = {}) {
  const market = await agentMarket(test, '10.00', { pricing_model: 'per_query', price_ut: '2.00', callback_url: callbackUrl, ...overrides });
  return { ...market, capability: market.capability as { id: string; price_ut: string; callback_secret: string } };
}

/** A failed invoke: the error, nothing charged, the transaction failed and the money back. */
async function expectFailedInvoke(
  test: TestApp,
  response: { status: number; body: { code: number; data: Record<string, unknown> } },
  code: 5020 | 5040,
  buyer: Actor,
  seller: Actor,
) {
  expect(response.status, JSON.stringify(response.body)).toBe(code === 5020 ? 502 : 504);
  expect(response.body).toMatchObject({ code, data: { charged_ut: '0.00', status: 'failed' } });
  const id = response.body.data.transaction_id as string;
  expect((await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data.status).toBe('failed');
  expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
  expect(await balance(test, seller)).toMatchObject({ available: '0.00' });
  return id;
}

describe('invoke with loopback callbacks trusted (and every other internal range refused)', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp({ PLATFORM_FEE_BPS: '500' }, { callbackNetwork: { allowAddress: publicAnd(['127.0.0.0/8']), resolve: resolver } });
  });
  afterAll(() => test.close());

  it('signs the callback, returns its result, settles, pays the seller less the fee, and streams every step', async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/ok'));
    const response = await invoke(test, buyer, capability.id, { input: { q: 'hello', n: 1 } });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const answer = response.body.data;
    expect(answer).toMatchObject({ result: { echo: { q: 'hello', n: 1 }, answered: true }, charged_ut: '2.00', status: 'settled' });
    expect(Number.isInteger(answer.latency_ms) && answer.latency_ms >= 0).toBe(true);

    const [sent] = callbacks.receivedFor(answer.transaction_id);
    expect(callbacks.receivedFor(answer.transaction_id)).toHaveLength(1);
    expect(JSON.parse(sent!.body)).toEqual({
      transaction_id: answer.transaction_id,
      capability_id: capability.id,
      input: { q: 'hello', n: 1 },
      buyer_user_id: buyer.userId,
    });
    const header = sent!.headers['x-marketplace-signature'] as string;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(capability.callback_secret, header, sent!.body, Math.floor(Date.now() / 1000))).toBe(true);
    expect(verifySignature('cbs_another-secret', header, sent!.body, Math.floor(Date.now() / 1000))).toBe(false);

    expect(await balance(test, buyer)).toMatchObject({ available: '8.00', frozen: '0.00' });
    expect(await balance(test, seller)).toMatchObject({ available: '1.90' });
    const transaction = (await test.http.get(`/api/v1/transactions/${answer.transaction_id}`).set(seller.headers).expect(200)).body.data;
    expect(transaction).toMatchObject({
      status: 'settled',
      price_ut: '2.00',
      result_payload: { echo: { q: 'hello', n: 1 }, answered: true },
      input: { q: 'hello', n: 1 },
    });

    const server = await listen(test);
    const events = openEventSource(`${server.url}/api/v1/transactions/${answer.transaction_id}/events`, { ...buyer.headers, 'Last-Event-ID': '0' });
    try {
      await expect.poll(() => events.received.length).toBe(3);
      expect(events.received.map((event) => event.type)).toEqual(['transaction.pending_freeze', 'transaction.frozen', 'transaction.settled']);
    } finally {
      events.close();
      await server.close();
    }
  });

  it('accepts a null result, and an empty body {} (input {} is sent)', async () => {
    const { buyer, capability } = await perQueryMarket(test, callbacks.url('/null'));
    const response = await test.http.post(`/api/v1/capabilities/${capability.id}/invoke`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send({});
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.data).toMatchObject({ result: null, charged_ut: '2.00', status: 'settled' });
    expect(JSON.parse(callbacks.receivedFor(response.body.data.transaction_id)[0]!.body).input).toEqual({});
  });

  it('invokes a per_use capability with a callback_url too', async () => {
    const { buyer, capability } = await perQueryMarket(test, callbacks.url('/ok'), { pricing_model: 'per_use' });
    expect((await invoke(test, buyer, capability.id)).status).toBe(200);
  });

  it.each([
    ['a non-2xx answer', '/status-500', /HTTP 500/],
    ['an answer that is not JSON', '/not-json', /not JSON/],
    ['an answer over 1 MiB', '/big', /larger than 1048576 bytes/],
    ['a result that is an array', '/array', /object or null/],
    ['an answer without result', '/no-result', /`result` member/],
  ])('fails on %s (5020), releases the funds and calls once', async (_name, path, detail) => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url(path));
    const response = await invoke(test, buyer, capability.id);
    const id = await expectFailedInvoke(test, response, 5020, buyer, seller);
    expect(response.body.data.detail).toMatch(detail);
    expect(callbacks.receivedFor(id)).toHaveLength(1);
  });

  it('fails with 5040 when the callback does not answer within callback_timeout_sec', async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/hang'), { callback_timeout_sec: 5 });
    const response = await invoke(test, buyer, capability.id);
    await expectFailedInvoke(test, response, 5040, buyer, seller);
  }, 20_000);

  it('refuses a redirect to a private address, a redirect to a name that resolves to one, and follows one to an allowed address', async () => {
    const literal = await perQueryMarket(test, callbacks.url('/redirect-private'));
    const first = await invoke(test, literal.buyer, literal.capability.id);
    await expectFailedInvoke(test, first, 5020, literal.buyer, literal.seller);
    expect(first.body.data.detail).toMatch(/private or reserved address/);
    // The refusal names the operator's setting that would allow it.
    expect(first.body.data.setting).toBe('CALLBACK_ALLOW_PRIVATE');
    expect(first.body.data.detail).toContain('CALLBACK_ALLOW_PRIVATE=true');

    const named = await perQueryMarket(test, callbacks.url('/redirect-name'));
    const second = await invoke(test, named.buyer, named.capability.id);
    const id = await expectFailedInvoke(test, second, 5020, named.buyer, named.seller);
    // Only the first hop reached the server: the redirect's target was refused before connecting.
    expect(callbacks.receivedFor(id).map((entry) => entry.path)).toEqual(['/redirect-name']);

    const allowed = await perQueryMarket(test, callbacks.url('/redirect-loopback'));
    const third = await invoke(test, allowed.buyer, allowed.capability.id);
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    expect(callbacks.receivedFor(third.body.data.transaction_id).map((entry) => entry.path)).toEqual(['/redirect-loopback', '/ok']);
  });

  it('refuses a callback name that resolves to a private address, also when only one of its addresses does', async () => {
    for (const host of ['internal.invoke.test', 'mixed.invoke.test']) {
      const { buyer, seller, capability } = await perQueryMarket(test, `http://${host}:${callbacks.port}/ok`);
      const response = await invoke(test, buyer, capability.id);
      const id = await expectFailedInvoke(test, response, 5020, buyer, seller);
      expect(callbacks.receivedFor(id)).toHaveLength(0);
    }
    const { buyer, capability } = await perQueryMarket(test, `http://callback.invoke.test:${callbacks.port}/ok`);
    expect((await invoke(test, buyer, capability.id)).status).toBe(200);
  });

  it(raceTest('two concurrent invokes with one key charge once, call once, and both get the one answer; a retry replays it'), async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/slow'));
    const key = randomUUID();
    const [first, second] = await Promise.all([
      invoke(test, buyer, capability.id, { input: { q: 'once' } }, key),
      invoke(test, buyer, capability.id, { input: { q: 'once' } }, key),
    ]);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data).toEqual(first.body.data);
    const id = first.body.data.transaction_id;
    expect(callbacks.receivedFor(id)).toHaveLength(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '8.00', frozen: '0.00' });
    expect(await balance(test, seller)).toMatchObject({ available: '1.90' });

    const retry = await invoke(test, buyer, capability.id, { input: { q: 'once' } }, key);
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data).toEqual(first.body.data);
    expect(callbacks.receivedFor(id)).toHaveLength(1);

    const reused = await invoke(test, buyer, capability.id, { input: { q: 'other' } }, key);
    expect(reused.status).toBe(422);
    expect(reused.body.code).toBe(4220);
    expect(await balance(test, buyer)).toMatchObject({ available: '8.00', frozen: '0.00' });
  });

  it('replays a failure with the same key without calling again', async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/status-500'));
    const key = randomUUID();
    const first = await invoke(test, buyer, capability.id, undefined, key);
    const id = await expectFailedInvoke(test, first, 5020, buyer, seller);
    const again = await invoke(test, buyer, capability.id, undefined, key);
    expect(again.status).toBe(502);
    expect(again.body.data).toEqual(first.body.data);
    expect(callbacks.receivedFor(id)).toHaveLength(1);
  });

  it('the sweeper releases an invoke whose server died mid-call; the late answer cannot settle it', async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/gate?gate=sweeper'), { callback_timeout_sec: 30 });
    const pending = invoke(test, buyer, capability.id).then((response) => response);
    await expect.poll(() => callbacks.gateReached('sweeper')).toBe(true);
    const [transaction] = await test.runtime.database.db('transactions').where({ buyer_user_id: buyer.userId });
    expect(transaction.status).toBe('frozen');
    expect(await balance(test, buyer)).toMatchObject({ available: '8.00', frozen: '2.00' });
    // Mid-invoke the transaction is the system's: neither party may move it.
    expect((await act(test, buyer, transaction.id, 'cancel')).body).toMatchObject({ code: 4090 });
    expect((await act(test, seller, transaction.id, 'accept')).body).toMatchObject({ code: 4090 });

    expect(await test.runtime.engine.sweeper.runOnce()).toBe(0);
    test.clock.advanceMs(30_000 + 15_000 + 1_000);
    expect(await test.runtime.engine.sweeper.runOnce()).toBe(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });

    callbacks.openGate('sweeper');
    const response = await pending;
    await expectFailedInvoke(test, response, 5040, buyer, seller);
  });
});

describe('invoke: who may call it, and what it checks first', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp({}, { callbackNetwork: { allowAddress: publicAnd(['127.0.0.0/8']), resolve: resolver } });
  });
  afterAll(() => test.close());

  it('refuses a human (4030), the owner (4030), a capability not priced per query or per use or without a callback_url (4030)', async () => {
    const { seller, capability } = await perQueryMarket(test, callbacks.url('/ok'));
    const human = await signUpHuman(test);
    expect((await invoke(test, human, capability.id)).body).toMatchObject({ code: 4030 });
    expect((await invoke(test, seller, capability.id)).body).toMatchObject({ code: 4030 });
    const hourly = await perQueryMarket(test, callbacks.url('/ok'), { pricing_model: 'per_hour' });
    expect((await invoke(test, hourly.buyer, hourly.capability.id)).body).toMatchObject({ code: 4030 });
    // A per_use capability registered before per_use needed a callback_url (the API no longer lets one be made).
    const withoutCallback = await agentMarket(test, '10.00', { pricing_model: 'per_use', price_ut: '2.00' });
    await test.runtime.database.db('capabilities').where({ id: withoutCallback.capability.id }).update({ callback_url: null });
    expect((await invoke(test, withoutCallback.buyer, withoutCallback.capability.id)).body).toMatchObject({
      code: 4030,
      data: { detail: 'this capability has no callback_url to invoke' },
    });
    expect(await balance(test, withoutCallback.buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
    expect(callbacks.receivedFor(capability.id)).toHaveLength(0);
  });

  it('hides a human capability, a deleted one, an unavailable one and an unknown id (4040)', async () => {
    const buyer = await createAgent(test);
    await credit(test, buyer.userId, '10.00');
    const humanSeller = await signUpHuman(test);
    const humanCapability = (
      await test.http
        .post('/api/v1/capabilities')
        .set(humanSeller.headers)
        .send({
          title: 'T',
          description: 'D',
          category: 'ai_automation',
          capability_type: 'service',
          pricing_model: 'per_query',
          price_ut: '1.00',
          callback_url: callbacks.url('/ok'),
        })
        .expect(201)
    ).body.data;
    const deleted = await perQueryMarket(test, callbacks.url('/ok'));
    await test.http.delete(`/api/v1/capabilities/${deleted.capability.id}`).set(deleted.seller.headers).expect(200);
    const withdrawn = await perQueryMarket(test, callbacks.url('/ok'));
    await test.http.put(`/api/v1/capabilities/${withdrawn.capability.id}`).set(withdrawn.seller.headers).send({ available: false }).expect(200);
    for (const id of [humanCapability.id, deleted.capability.id, withdrawn.capability.id, randomUUID()]) {
      const response = await invoke(test, buyer, id);
      expect(response.status).toBe(404);
      expect(response.body.code).toBe(4040);
    }
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
  });

  it('needs credentials (4010), one kind only (4011)', async () => {
    const { buyer, capability } = await perQueryMarket(test, callbacks.url('/ok'));
    const human = await signUpHuman(test);
    expect((await test.http.post(`/api/v1/capabilities/${capability.id}/invoke`).send({})).body).toMatchObject({ code: 4010 });
    expect(
      (
        await test.http
          .post(`/api/v1/capabilities/${capability.id}/invoke`)
          .set({ ...buyer.headers, Authorization: human.headers.Authorization })
          .set('Idempotency-Key', 'k')
          .send({})
      ).body,
    ).toMatchObject({ code: 4011 });
  });

  it('refuses 4020 when the balance is short, without calling the callback or holding anything', async () => {
    const { buyer, seller, capability } = await perQueryMarket(test, callbacks.url('/ok'), { price_ut: '20.00' });
    const response = await invoke(test, buyer, capability.id);
    expect(response.status).toBe(402);
    expect(response.body).toMatchObject({ code: 4020, data: { currency: 'UT', available: '10.00', required: '20.00' } });
    expect(callbacks.received.filter((entry) => entry.body.includes(capability.id))).toHaveLength(0);
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
    expect((await test.http.get('/api/v1/transactions').set(seller.headers).expect(200)).body.data.total).toBe(0);
  });

  it.each([
    ['no idempotency key', {}, null],
    ['a key over 64 characters', {}, 'k'.repeat(65)],
    ['a header key and a different body key', { idempotency_key: 'body-key' }, 'header-key'],
    ['an input that is not an object', { input: [1] }, 'key-1'],
    ['an unknown field', { surprise: true }, 'key-2'],
  ])('is 4000 with %s', async (_name, body, key) => {
    const { buyer, capability } = await perQueryMarket(test, callbacks.url('/ok'));
    const response = await invoke(test, buyer, capability.id, body, key);
    expect(response.status, JSON.stringify(response.body)).toBe(400);
    expect(response.body.code).toBe(4000);
    expect(await balance(test, buyer)).toMatchObject({ available: '10.00', frozen: '0.00' });
  });

  it('takes the key from the body as well as from the header', async () => {
    const { buyer, capability } = await perQueryMarket(test, callbacks.url('/ok'));
    const response = await invoke(test, buyer, capability.id, { input: { a: 1 }, idempotency_key: 'from-body' }, null);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
  });

  it('is in the OpenAPI document with its errors', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const operation = document.paths['/api/v1/capabilities/{cap_id}/invoke'].post;
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '402', '403', '404', '409', '422', '429', '502', '504']));
  });
});

describe('invoke with the default callback policy (CALLBACK_ALLOW_PRIVATE=false)', () => {
  let test: TestApp;
  beforeAll(async () => {
    test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'false' });
  });
  afterAll(() => test.close());

  it.each(['127.0.0.1', 'localhost', '[::1]', '[::ffff:127.0.0.1]'])('refuses http://%s: the server never receives a request', async (host) => {
    const { buyer, seller, capability } = await perQueryMarket(test, `http://${host}:${callbacks.port}/ok`);
    const before = callbacks.received.length;
    const response = await invoke(test, buyer, capability.id);
    await expectFailedInvoke(test, response, 5020, buyer, seller);
    expect(response.body.data.detail).toMatch(/private or reserved address|could not be reached/);
    expect(callbacks.received.length).toBe(before);
  });
});
