import type { Knex } from 'knex';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { startTestApp, type TestApp, usingRealBackends, raceTest } from '../helpers/app.ts';
import { act, admin, agentMarket, balance, buy, createCapability, credit, humanMarket } from '../helpers/market.ts';

/**
 * Decisions section 5 through REST: a key's scope is the credential plus method and path; the
 * same request under the same key replays the first response, a different one is 4220, one
 * still in flight is 4091, and a failed request leaves its key free for a retry.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const transactionsPath = '/api/v1/transactions';

function createTransaction(actor: Actor, body: Record<string, unknown>, key?: string) {
  const request = test.http.post(transactionsPath).set(actor.headers);
  if (key !== undefined) request.set('Idempotency-Key', key);
  return request.send(body);
}

function creditWithKey(userId: string, amount: string, key: string) {
  return test.http.post('/api/v1/admin/wallet/credit').set(admin).set('Idempotency-Key', key).send({ user_id: userId, currency: 'UT', amount });
}

/** How many purchases the buyer sees in its own transaction list. */
async function purchasesOf(buyer: Actor): Promise<number> {
  const response = await test.http.get(transactionsPath).query({ role: 'buyer' }).set(buyer.headers).expect(200);
  return response.body.data.total;
}

describe('the same key and the same request', () => {
  it('replays the first response with Idempotent-Replayed: true and creates nothing more', async () => {
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const body = { capability_id: capability.id };

    const first = await createTransaction(buyer, body, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const second = await createTransaction(buyer, body, key);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.code).toBe(0);
    expect(second.body.data).toEqual(first.body.data);
    expect(second.body.data.id).toBe(first.body.data.id);

    expect(await purchasesOf(buyer)).toBe(1);
  });

  it('treats a body with the same members in another order as the same request', async () => {
    // JSON object members are unordered: a client library re-serializing its retry may well
    // emit them in another order, and that must still be recognized as the same request.
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const contextId = randomUUID();
    const first = await test.http
      .post(transactionsPath)
      .set(buyer.headers)
      .set('Idempotency-Key', key)
      .set('Content-Type', 'application/json')
      .send(`{"capability_id":"${capability.id}","context_id":"${contextId}"}`);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const retry = await test.http
      .post(transactionsPath)
      .set(buyer.headers)
      .set('Idempotency-Key', key)
      .set('Content-Type', 'application/json')
      .send(`{"context_id":"${contextId}","capability_id":"${capability.id}"}`);
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data.id).toBe(first.body.data.id);
    expect(await purchasesOf(buyer)).toBe(1);
  });
});

describe('the same key and a different request', () => {
  it('is refused with 4220 (HTTP 422) and leaves the first effect alone', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const other = await createCapability(test, seller, { price_ut: '3.00' });
    const key = randomUUID();
    const first = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);

    const differentCapability = await createTransaction(buyer, { capability_id: other.id }, key);
    expect(differentCapability.status).toBe(422);
    expect(differentCapability.body).toMatchObject({ code: 4220, message: 'idempotency_key_reused' });

    const extraField = await createTransaction(buyer, { capability_id: capability.id, context_id: randomUUID() }, key);
    expect(extraField.status).toBe(422);
    expect(extraField.body.code).toBe(4220);

    expect(await purchasesOf(buyer)).toBe(1);
    // The original is still replayable afterwards.
    const replay = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    expect(replay.body.data.id).toBe(first.body.data.id);
  });

  it('is refused on an action too (deliver with another payload)', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const created = await buy(test, buyer, capability.id);
    await act(test, buyer, created.id, 'freeze').expect(200);
    await act(test, seller, created.id, 'accept').expect(200);
    const key = randomUUID();
    const delivered = await act(test, seller, created.id, 'deliver', { result_payload: { answer: 1 } })
      .set('Idempotency-Key', key)
      .expect(200);
    const changed = await act(test, seller, created.id, 'deliver', { result_payload: { answer: 2 } }).set('Idempotency-Key', key);
    expect(changed.status).toBe(422);
    expect(changed.body.code).toBe(4220);
    const replay = await act(test, seller, created.id, 'deliver', { result_payload: { answer: 1 } })
      .set('Idempotency-Key', key)
      .expect(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data).toEqual(delivered.body.data);
    expect((await test.http.get(`${transactionsPath}/${created.id}`).set(buyer.headers).expect(200)).body.data.result_payload).toEqual({ answer: 1 });
  });
});

describe('where the key comes from', () => {
  it('refuses a header key and a different body key with 4000, creating nothing', async () => {
    const { buyer, capability } = await agentMarket(test);
    const response = await createTransaction(buyer, { capability_id: capability.id, idempotency_key: randomUUID() }, randomUUID());
    expect(response.status).toBe(400);
    expect(response.body.code).toBe(4000);
    expect(await purchasesOf(buyer)).toBe(0);
  });

  it('accepts the same key in header and body, and a retry with the key only in the body replays it', async () => {
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const first = await createTransaction(buyer, { capability_id: capability.id, idempotency_key: key }, key);
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const bodyOnly = await createTransaction(buyer, { capability_id: capability.id, idempotency_key: key });
    expect(bodyOnly.status).toBe(201);
    expect(bodyOnly.headers['idempotent-replayed']).toBe('true');
    expect(bodyOnly.body.data.id).toBe(first.body.data.id);

    const headerOnly = await createTransaction(buyer, { capability_id: capability.id }, key);
    expect(headerOnly.status).toBe(201);
    expect(headerOnly.headers['idempotent-replayed']).toBe('true');
    expect(headerOnly.body.data.id).toBe(first.body.data.id);
    expect(await purchasesOf(buyer)).toBe(1);
  });

  it('requires a key from agent callers creating a transaction (4000), not from humans', async () => {
    const agents = await agentMarket(test);
    const withoutKey = await createTransaction(agents.buyer, { capability_id: agents.capability.id });
    expect(withoutKey.status).toBe(400);
    expect(withoutKey.body.code).toBe(4000);
    expect(await purchasesOf(agents.buyer)).toBe(0);

    const humans = await humanMarket(test);
    const human = await createTransaction(humans.buyer, { capability_id: humans.capability.id });
    expect(human.status, JSON.stringify(human.body)).toBe(201);
    expect(human.body.data.currency).toBe('CNY');
    // Without a key nothing is deduplicated: a second call is a second purchase.
    await createTransaction(humans.buyer, { capability_id: humans.capability.id }).expect(201);
    expect(await purchasesOf(humans.buyer)).toBe(2);
  });

  it('refuses malformed keys with 4000: over 64 characters, or with a space', async () => {
    const { buyer, capability } = await agentMarket(test);
    const body = { capability_id: capability.id };
    for (const key of ['k'.repeat(65), 'has a space']) {
      const inHeader = await createTransaction(buyer, body, key);
      expect(inHeader.status, key).toBe(400);
      expect(inHeader.body.code).toBe(4000);
      const inBody = await createTransaction(buyer, { ...body, idempotency_key: key });
      expect(inBody.status, key).toBe(400);
      expect(inBody.body.code).toBe(4000);
    }
    expect(await purchasesOf(buyer)).toBe(0);
    // 64 printable characters is the longest key allowed.
    await createTransaction(buyer, body, `${'k'.repeat(63)}~`).expect(201);
    expect(await purchasesOf(buyer)).toBe(1);
  });
});

describe('the scope of a key', () => {
  it('is per user: another buyer with the same key makes its own purchase', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const otherBuyer = await createAgent(test);
    await credit(test, otherBuyer.userId, '100.00');
    const key = randomUUID();
    const mine = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    const theirs = await createTransaction(otherBuyer, { capability_id: capability.id }, key);
    expect(theirs.status).toBe(201);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(theirs.body.data.buyer_user_id).toBe(otherBuyer.userId);
    expect(await purchasesOf(buyer)).toBe(1);
    expect(await purchasesOf(otherBuyer)).toBe(1);
    expect(seller.userId).toBe(mine.body.data.seller_user_id);
  });

  it('is per credential: the same user through another platform key makes its own purchase', async () => {
    const { buyer, capability } = await agentMarket(test);
    const secondKey = await createApiKey(test);
    await linkUser(test, secondKey.id, buyer.userId);
    const viaSecondKey: Actor = { userId: buyer.userId, headers: { 'X-Api-Key': secondKey.api_key, 'X-Platform-User-Id': buyer.userId } };
    const key = randomUUID();
    const first = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    const second = await createTransaction(viaSecondKey, { capability_id: capability.id }, key);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.data.id).not.toBe(first.body.data.id);
    expect(await purchasesOf(buyer)).toBe(2);
  });

  it('is per endpoint: one key freezes two different transactions, and may also name a create', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '10.00' });
    const key = randomUUID();
    const first = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    const second = await buy(test, buyer, capability.id);

    const freezeFirst = await act(test, buyer, first.body.data.id, 'freeze').set('Idempotency-Key', key);
    expect(freezeFirst.status, JSON.stringify(freezeFirst.body)).toBe(200);
    expect(freezeFirst.headers['idempotent-replayed']).toBeUndefined();
    const freezeSecond = await act(test, buyer, second.id, 'freeze').set('Idempotency-Key', key);
    expect(freezeSecond.status, JSON.stringify(freezeSecond.body)).toBe(200);
    expect(freezeSecond.headers['idempotent-replayed']).toBeUndefined();
    expect(freezeSecond.body.data.id).toBe(second.id);
    expect(freezeSecond.body.data.status).toBe('frozen');

    expect(await balance(test, buyer)).toMatchObject({ available: '80.00', frozen: '20.00' });
  });
});

describe(raceTest('concurrent requests with one key'), () => {
  it('create exactly one transaction; the others replay it or get 4091', async () => {
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const responses = await Promise.all(Array.from({ length: 10 }, () => createTransaction(buyer, { capability_id: capability.id }, key)));
    const created = responses.filter((response) => response.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((response) => response.body.data.id)).size).toBe(1);
    expect(created.filter((response) => response.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
    for (const response of responses.filter((each) => each.status !== 201)) {
      expect(response.status, JSON.stringify(response.body)).toBe(409);
      expect(response.body.code).toBe(4091);
    }
    expect(await purchasesOf(buyer)).toBe(1);
    // Once settled down, the key replays the one transaction.
    const later = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    expect(later.body.data.id).toBe(created[0]!.body.data.id);
  });

  it('freeze the price once', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '25.00' });
    const created = await buy(test, buyer, capability.id);
    const key = randomUUID();
    const responses = await Promise.all(Array.from({ length: 10 }, () => act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key)));
    const succeeded = responses.filter((response) => response.status === 200);
    expect(succeeded.length).toBeGreaterThanOrEqual(1);
    expect(succeeded.filter((response) => response.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
    for (const response of responses.filter((each) => each.status !== 200)) expect(response.body.code, JSON.stringify(response.body)).toBe(4091);
    expect(await balance(test, buyer)).toMatchObject({ available: '75.00', frozen: '25.00' });
  });
});

describe('a failed request', () => {
  it('does not use up its key: after a top-up the same key freezes', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '5.00', { price_ut: '10.00' });
    const created = await buy(test, buyer, capability.id);
    const key = randomUUID();
    const short = await act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key);
    expect(short.status).toBe(402);
    expect(short.body).toMatchObject({ code: 4020, data: { currency: 'UT', available: '5.00', required: '10.00' } });

    await credit(test, buyer.userId, '10.00');
    const retry = await act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(retry.body.data.status).toBe('frozen');
    expect(await balance(test, buyer)).toMatchObject({ available: '5.00', frozen: '10.00' });

    // From now on the key replays that success, even after the transaction has moved on.
    await act(test, seller, created.id, 'accept').expect(200);
    const replay = await act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data).toEqual(retry.body.data);
    expect(await balance(test, buyer)).toMatchObject({ available: '5.00', frozen: '10.00' });
  });
});

describe('replaying an action', () => {
  it('does not freeze twice', async () => {
    const { buyer, capability } = await agentMarket(test, '50.00', { price_ut: '20.00' });
    const created = await buy(test, buyer, capability.id);
    const key = randomUUID();
    const first = await act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key).expect(200);
    const second = await act(test, buyer, created.id, 'freeze').set('Idempotency-Key', key).expect(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data).toEqual(first.body.data);
    expect(await balance(test, buyer)).toEqual({ available: '30.00', frozen: '20.00', total: '50.00', currency: 'UT' });
    const history = await test.http.get('/api/v1/wallet/transactions').query({ type: 'freeze' }).set(buyer.headers).expect(200);
    // One freeze movement: one entry on each bucket.
    expect(history.body.data.total).toBe(2);
    // Without a key, a second freeze is a state error, not a second hold.
    const again = await act(test, buyer, created.id, 'freeze');
    expect(again.status).toBe(409);
    expect(again.body.code).toBe(4090);
  });
});

describe('admin credit', () => {
  it('with the same key twice credits once; with another amount it is 4220', async () => {
    const user = await createAgent(test);
    const key = randomUUID();
    const first = await creditWithKey(user.userId, '30.00', key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await creditWithKey(user.userId, '30.00', key);
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data).toEqual(first.body.data);
    expect(await balance(test, user)).toMatchObject({ available: '30.00', frozen: '0.00' });

    const different = await creditWithKey(user.userId, '31.00', key);
    expect(different.status).toBe(422);
    expect(different.body.code).toBe(4220);
    expect(await balance(test, user)).toMatchObject({ available: '30.00' });

    const deposits = await test.http.get('/api/v1/wallet/transactions').query({ type: 'deposit' }).set(user.headers).expect(200);
    expect(deposits.body.data.total).toBe(1);
  });

  it(raceTest('concurrently with one key credits once'), async () => {
    const user = await signUpHuman(test);
    const key = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        test.http.post('/api/v1/admin/wallet/credit').set(admin).set('Idempotency-Key', key).send({ user_id: user.userId, currency: 'CNY', amount: '7.25' }),
      ),
    );
    for (const response of responses) expect([200, 409], JSON.stringify(response.body)).toContain(response.status);
    expect(responses.filter((response) => response.status === 200 && response.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
    expect(await balance(test, user, 'cash')).toMatchObject({ available: '7.25', frozen: '0.00' });
  });
});

describe('retention', () => {
  // Last in the file: it moves the shared clock a day forward.
  it('forgets a key after 24 hours, so it may then name a new request', async () => {
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const first = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    test.clock.advanceMs(23 * 60 * 60 * 1000);
    const withinRetention = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    expect(withinRetention.headers['idempotent-replayed']).toBe('true');
    expect(withinRetention.body.data.id).toBe(first.body.data.id);

    test.clock.advanceMs(2 * 60 * 60 * 1000);
    const afterRetention = await createTransaction(buyer, { capability_id: capability.id }, key).expect(201);
    expect(afterRetention.headers['idempotent-replayed']).toBeUndefined();
    expect(afterRetention.body.data.id).not.toBe(first.body.data.id);
    expect(await purchasesOf(buyer)).toBe(2);
  });
});

describe('a request still in flight after a minute', () => {
  /**
   * Sends a purchase, keeps it in flight with a lock held by `block`, sends it again with its key
   * a minute later (a client that timed out and retried), then releases the lock.
   */
  async function retryWhileInFlight<R>(
    block: (blocker: Knex.Transaction, buyerUserId: string) => Promise<unknown>,
    send: (buyer: Actor, capabilityId: string) => Promise<R>,
    capabilityFields: Record<string, unknown> = {},
  ) {
    const { buyer, capability } = await agentMarket(test, '100.00', capabilityFields);
    const db = test.runtime.database.db;
    const blocker = await db.transaction();
    let first: Promise<R> | undefined;
    let retry: Promise<R> | undefined;
    try {
      await block(blocker, buyer.userId);
      first = send(buyer, capability.id);
      await until(async () => (await lockWaiters(db)) >= 1);
      expect(await lockWaiters(db)).toBe(1);
      test.clock.advanceMs(61_000);
      let retryDone = false;
      retry = send(buyer, capability.id).then((response) => {
        retryDone = true;
        return response;
      });
      await until(async () => retryDone || (await lockWaiters(db)) >= 2);
    } finally {
      await blocker.rollback();
    }
    const [original, retried] = await Promise.all([first, retry]);
    return { buyer, capability, original, retried };
  }

  // Only real PostgreSQL has a second connection to hold a lock with; on embedded PGlite every
  // request is serialized on its one connection, so no request can overlap another at all.
  it.runIf(usingRealBackends())('is not run a second time by a retry with its key', { timeout: 30_000 }, async () => {
    // The buyer's event stream row is held, so the purchase waits inside its write, as a slow
    // request would under load: it holds the key's advisory lock, so the retry cannot take over.
    const key = randomUUID();
    const { buyer, original, retried } = await retryWhileInFlight(
      (blocker, buyerUserId) => blocker.raw('SELECT 1 FROM event_streams WHERE owner_user_id = ? FOR UPDATE', [buyerUserId]),
      (buyer, capabilityId) => createTransaction(buyer, { capability_id: capabilityId }, key).then((response) => response),
    );
    expect(original.status, JSON.stringify(original.body)).toBe(201);
    // The retry must be told to wait (4091) or be given the original: never a second purchase.
    if (retried.status === 201) expect(retried.body.data.id).toBe(original.body.data.id);
    else expect(retried.body.code, JSON.stringify(retried.body)).toBe(4091);
    expect(await purchasesOf(buyer)).toBe(1);
  });

  it.runIf(usingRealBackends())('writes nothing once a retry has taken its claim over', { timeout: 30_000 }, async () => {
    // A purchase of a capability with a rate limit counts its use (capability_usage) between its
    // claim and its write. With that table locked, the original stalls there, the retry takes the
    // claim over a minute later; then both run. (The capability and the buyer's last purchase are
    // read in the claim's own statement, so a lock on transactions would stall the claim itself.)
    // Engine-level, with an A2A v0.1 client task id: REST has none.
    const taskId = `task-${randomUUID()}`;
    const request = { key: randomUUID(), operation: 'test create', fingerprint: 'same request' };
    const { buyer, capability, original, retried } = await retryWhileInFlight(
      (blocker) => blocker.raw('LOCK TABLE capability_usage IN ACCESS EXCLUSIVE MODE'),
      (buyer, capabilityId) =>
        test.runtime.engine.transactions
          .create(
            { user_id: buyer.userId, caller_type: 'agent', platform: null, api_key_id: null },
            { capability_id: capabilityId, client_task_id: taskId },
            request,
          )
          .then(
            (outcome) => ({ outcome }),
            (error: unknown) => ({ error }),
          ),
      { rate_limit_per_min: 100 },
    );
    expect('outcome' in retried && retried.outcome.replayed === false, JSON.stringify(retried)).toBe(true);
    expect('error' in original && original.error).toMatchObject({ code: 4091 });
    expect(await purchasesOf(buyer)).toBe(1);
    const replay = await test.runtime.engine.transactions.create(
      { user_id: buyer.userId, caller_type: 'agent', platform: null, api_key_id: null },
      { capability_id: capability.id, client_task_id: taskId },
      request,
    );
    expect(replay.replayed).toBe(true);
    expect(replay.data.id).toBe('outcome' in retried ? retried.outcome.data.id : null);
  });
});
