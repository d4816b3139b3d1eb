import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import type { UnitOfWork } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { type Engine, createEngine } from '../../src/engine/index.ts';
import { createIdempotency } from '../../src/engine/money/index.ts';
import { type StateChange, commitChanges } from '../../src/store/change.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { createAgent } from '../helpers/actors.ts';
import { agentMarket, balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Repeat purchases under an Idempotency-Key are decided on the instance's copy of the buyer's
 * last purchase read, and their change statement claims the key itself (a fresh claim,
 * engine/money/idempotency.ts; store/change-purchases.ts). What a buyer sees must be exactly what
 * the regular way gives: the price as it is now, offers withdrawn, replays, 4220 and 4091, one
 * transaction per key, on one instance and across two on one database (A: the test app, B: a
 * second engine with caches of its own).
 */
let test: TestApp;
let other: Engine;
let otherHttp: ReturnType<typeof supertest>;

beforeAll(async () => {
  test = await startTestApp();
  other = await createEngine(test.runtime.engine.dependencies);
  otherHttp = supertest(createApp(other));
});
afterAll(async () => {
  await other?.close();
  await test?.close();
});

type Http = ReturnType<typeof supertest>;

/** A caller and a request for the engine's idempotency itself, without the HTTP layer. */
const principal = (): Principal => ({ user_id: randomUUID(), caller_type: 'agent', platform: null, api_key_id: null });
const request = () => ({ key: randomUUID(), operation: 'POST /test', fingerprint: randomUUID() });

const purchase = (http: Http, headers: Record<string, string>, body: Record<string, unknown>, key = randomUUID()) =>
  http
    .post('/api/v1/transactions')
    .set({ ...headers, 'Idempotency-Key': key })
    .send(body);

async function boughtIds(headers: Record<string, string>): Promise<string[]> {
  const list = (await test.http.get('/api/v1/transactions?role=buyer&page_size=100').set(headers).expect(200)).body.data;
  return (list.items as { id: string }[]).map((item) => item.id);
}

describe('a repeat purchase under a new key', () => {
  it('is bought, replayed under its key, and refused 4220 with another request under it', async () => {
    const { buyer, capability } = await agentMarket(test);
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    const key = randomUUID();
    const first = await purchase(test.http, buyer.headers, { capability_id: capability.id, note: 'second' }, key).expect(201);
    expect(first.body.data).toMatchObject({ status: 'pending_freeze', price_ut: '10.00', note: 'second' });
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await purchase(test.http, buyer.headers, { capability_id: capability.id, note: 'second' }, key).expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    const reused = await purchase(test.http, buyer.headers, { capability_id: capability.id, note: 'other' }, key).expect(422);
    expect(reused.body).toMatchObject({ code: 4220, data: { detail: 'this Idempotency-Key was used with a different request' } });
    expect(await boughtIds(buyer.headers)).toHaveLength(2);
  });

  it('pays the price as it is now, not the one of the last purchase', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '4.00' }).expect(200);
    const cheaper = await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    expect(cheaper.body.data.price_ut).toBe('4.00');
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '6.00' }).expect(200);
    // Raised above the last price paid (4.00): refused without max_price, bought with it.
    expect((await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(409)).body.code).toBe(4093);
    const raised = await purchase(test.http, buyer.headers, { capability_id: capability.id, max_price: '6.00' }).expect(201);
    expect(raised.body.data.price_ut).toBe('6.00');
    expect(await boughtIds(buyer.headers)).toHaveLength(3);
  });

  it('of an offer withdrawn or deleted since is 4040 and buys nothing', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ available: false }).expect(200);
    expect((await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(404)).body.code).toBe(4040);
    const second = await createCapability(test, seller);
    await purchase(test.http, buyer.headers, { capability_id: second.id }).expect(201);
    await test.http.delete(`/api/v1/capabilities/${second.id}`).set(seller.headers).expect(200);
    expect((await purchase(test.http, buyer.headers, { capability_id: second.id }).expect(404)).body.code).toBe(4040);
    expect(await boughtIds(buyer.headers)).toHaveLength(2);
  });

  it('after a purchase on another instance compares with that one, the last', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '8.00' }).expect(200);
    // B buys at 8.00 and A's copy still says 10.00 was the last price paid (and an older version).
    await purchase(otherHttp, buyer.headers, { capability_id: capability.id }).expect(201);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ price_ut: '9.00' }).expect(200);
    // 9.00 is above the 8.00 last paid on B: refused on A too, however A's copy read.
    expect((await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(409)).body.code).toBe(4093);
    expect(await boughtIds(buyer.headers)).toHaveLength(2);
  });

  it('under a key that expired is a new purchase', async () => {
    const { buyer, capability } = await agentMarket(test);
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    const key = randomUUID();
    const first = await purchase(test.http, buyer.headers, { capability_id: capability.id }, key).expect(201);
    test.clock.advanceMs(25 * 60 * 60 * 1000);
    const later = await purchase(test.http, buyer.headers, { capability_id: capability.id }, key).expect(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(later.body.data.id).not.toBe(first.body.data.id);
    expect(await boughtIds(buyer.headers)).toHaveLength(3);
  });
});

describe('repeat purchases at once', () => {
  it(raceTest('under one key, on two instances, make one transaction; every answer is it or 4091'), async () => {
    const { buyer, capability } = await agentMarket(test);
    // Both instances hold a copy of the buyer's read.
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    await purchase(otherHttp, buyer.headers, { capability_id: capability.id }).expect(201);
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, index) => purchase(index % 2 === 0 ? test.http : otherHttp, buyer.headers, { capability_id: capability.id }, key)),
    );
    const made = answers.filter((answer) => answer.status === 201);
    expect(made.length).toBeGreaterThanOrEqual(1);
    expect(new Set(made.map((answer) => answer.body.data.id)).size).toBe(1);
    expect(made.filter((answer) => answer.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
    for (const answer of answers.filter((each) => each.status !== 201)) expect([answer.status, answer.body.code]).toEqual([409, 4091]);
    expect(await boughtIds(buyer.headers)).toHaveLength(3);
    // Asked again once all is done, the key answers with that transaction.
    const replay = await purchase(test.http, buyer.headers, { capability_id: capability.id }, key).expect(201);
    expect(replay.body.data.id).toBe(made[0]!.body.data.id);
  });

  it(raceTest('under many keys, on two instances, each make one, and then freeze within the money'), async () => {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    await credit(test, buyer.userId, '30.00');
    const capability = await createCapability(test, seller, { price_ut: '1.00' });
    await purchase(test.http, buyer.headers, { capability_id: capability.id }).expect(201);
    await purchase(otherHttp, buyer.headers, { capability_id: capability.id }).expect(201);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, index) => purchase(index % 2 === 0 ? test.http : otherHttp, buyer.headers, { capability_id: capability.id })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    const ids = answers.map((answer) => answer.body.data.id as string);
    expect(new Set(ids).size).toBe(40);
    expect(await boughtIds(buyer.headers)).toHaveLength(42);
    // 30.00 buys 30 of the 42: the rest are 4020, and the books hold.
    const freezes = await Promise.all((await boughtIds(buyer.headers)).map((id) => test.http.post(`/api/v1/transactions/${id}/freeze`).set(buyer.headers)));
    expect(freezes.filter((answer) => answer.status === 200)).toHaveLength(30);
    expect(freezes.filter((answer) => answer.status === 402).map((answer) => answer.body.code)).toEqual(Array.from({ length: 12 }, () => 4020));
    expect(await balance(test, buyer)).toMatchObject({ available: '0.00', frozen: '30.00', total: '30.00' });
  });
});

describe('a key this instance is working on', () => {
  it('answers a duplicate 4091 and another request under it 4220 at once, and nothing once it is done', async () => {
    const idempotency = createIdempotency(test.runtime.engine.dependencies);
    const caller = principal();
    const sent = request();
    let finish!: (value: string) => void;
    const first = idempotency.run(caller, sent, 201, () => new Promise<string>((resolve) => (finish = resolve)), 'several statements');
    await expect.poll(() => finish).toBeDefined();
    await expect(idempotency.run(caller, sent, 201, async () => 'duplicate')).rejects.toMatchObject({
      code: 4091,
      detail: 'a request with this Idempotency-Key is still being processed',
    });
    await expect(idempotency.run(caller, { ...sent, fingerprint: randomUUID() }, 201, async () => 'other')).rejects.toMatchObject({
      code: 4220,
      detail: 'this Idempotency-Key was used with a different request',
    });
    finish('the first');
    expect(await first).toEqual({ data: 'the first', status: 201, replayed: false });
    expect(await idempotency.run(caller, sent, 201, async () => 'again')).toEqual({ data: 'the first', status: 201, replayed: true });
  });
});

describe('a request at work for as long as a claim may be taken over', () => {
  it('blocks its retry on this instance no longer: the database takes the claim over, as for a request that died', async () => {
    const idempotency = createIdempotency(test.runtime.engine.dependencies);
    const caller = principal();
    const sent = request();
    void idempotency.run(caller, sent, 201, () => new Promise<never>(() => {}), 'one statement');
    await expect.poll(async () => test.runtime.database.db('idempotency_keys').where({ fingerprint: sent.fingerprint }).first()).toBeDefined();
    test.clock.advanceMs(59_000);
    await expect(idempotency.run(caller, sent, 201, async () => 'too early')).rejects.toMatchObject({ code: 4091 });
    test.clock.advanceMs(1_000);
    expect(await idempotency.run(caller, sent, 201, async () => 'the retry')).toEqual({ data: 'the retry', status: 201, replayed: false });
  });
});

describe('a cached read handed to the claim', () => {
  const read = (row: Record<string, unknown>, forgotten: string[]) => ({
    text: 'SELECT 1 AS one',
    bindings: [],
    cached: { row, forget: () => forgotten.push('forgotten') },
  });

  /** Runs work that records what it was handed, under a new key, with a cached read. */
  function runWithCachedRead(writes: 'one statement' | 'several statements', seen: unknown[], forgotten: string[]) {
    const idempotency = createIdempotency(test.runtime.engine.dependencies);
    const work = async (unit: UnitOfWork) => {
      seen.push(unit.prefetched, unit.claim?.fresh);
      return 'done without writing';
    };
    return idempotency.run(principal(), request(), 201, work, writes, read({ cached: 'row' }, forgotten));
  }

  it('is used by one-statement work only; work of several statements decides on its own reads', async () => {
    const [seen, forgotten]: [unknown[], string[]] = [[], []];
    expect(await runWithCachedRead('several statements', seen, forgotten)).toEqual({ data: 'done without writing', status: 201, replayed: false });
    expect(seen).toEqual([undefined, undefined]);
    expect(forgotten).toEqual([]);
  });

  it('refuses one-statement work that returned without writing its fresh claim, and forgets nothing it did not try', async () => {
    const [seen, forgotten]: [unknown[], string[]] = [[], []];
    await expect(runWithCachedRead('one statement', seen, forgotten)).rejects.toThrow(
      'single-statement work returned without completing its fresh idempotency claim',
    );
    expect(seen).toEqual([{ row: { cached: 'row' }, cached: true }, expect.objectContaining({ fingerprint: expect.any(String) })]);
    expect(forgotten).toEqual([]);
  });
});

describe('a fresh claim in a statement', () => {
  const fresh = {
    scopeHash: 'a'.repeat(64),
    token: randomUUID(),
    responseStatus: 201,
    responseBody: {},
    fingerprint: 'f',
    createdAt: new Date(),
    expiresAt: new Date(),
  };
  const check = { capabilityId: randomUUID(), capabilityVersion: '1', buyerUserId: randomUUID(), lastPurchaseId: null };
  const insert = (overrides: Partial<StateChange>): StateChange => ({
    transactionId: randomUUID(),
    buyerUserId: randomUUID(),
    sellerUserId: randomUUID(),
    write: { kind: 'insert', values: {} },
    legs: [],
    events: [{ type: 'transaction.pending_freeze', payload: {} }],
    at: new Date(),
    freshClaim: fresh,
    check,
    ...overrides,
  });
  const refusal = 'a fresh claim is for a checked purchase insert without a claim or a budget';

  it('is refused without its check, beside a claim or a budget take, or on a move, before anything is sent', async () => {
    const { db } = test.runtime.database;
    await expect(commitChanges(db, [insert({ check: undefined })])).rejects.toThrow(refusal);
    await expect(commitChanges(db, [insert({ claim: { ...fresh, lockId: '1' } })])).rejects.toThrow(refusal);
    await expect(commitChanges(db, [insert({ budget: { keyId: randomUUID(), day: '2026-11-27', amount: 1n } as never })])).rejects.toThrow(refusal);
    await expect(commitChanges(db, [insert({ write: { kind: 'update', fromStatus: 'frozen', fromSequence: 1, set: {} } })])).rejects.toThrow(refusal);
  });
});
