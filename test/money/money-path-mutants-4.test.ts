import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UnitOfWork } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createIdempotency, type Idempotency } from '../../src/engine/money/index.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { createDemand } from '../helpers/demands.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';

/**
 * The last survivors of the money path's mutation run (docs/decisions/operations-and-testing.md
 * "money-path (issue 30)"): the numbering of a change of two events (a freeze that accepts by
 * itself), and what a retry is told when the request whose key it sends is still at work, or
 * stalled past the minute after which a retry may take its claim over. The races need a second
 * connection to hold a lock with, so they run on PostgreSQL only (the embedded database has one).
 */
let test: TestApp;
let idempotency: Idempotency;
beforeAll(async () => {
  test = await startTestApp();
  idempotency = createIdempotency(test.runtime.engine.dependencies);
});
afterAll(() => test.close());

const db = () => test.runtime.database.db;
const principal = (userId: string = randomUUID()): Principal => ({ user_id: userId, caller_type: 'agent', platform: null, api_key_id: null });
const request = (fingerprint: string = randomUUID()) => ({ key: randomUUID(), operation: 'POST /test', fingerprint });
/** What a retry is told while the key's request may still be at work. */
const inProgress = { code: 4091, errorName: 'idempotency_in_progress', detail: 'a request with this Idempotency-Key is still being processed' };
/** Work that never ends: its process died while it ran, and nothing of it was written. */
const dies = () => new Promise<never>(() => {});

/** The `id:` and `event:` of every frame a transaction's event stream sent until `lastType`. */
async function streamedEvents(headers: Record<string, string>, transactionId: string, lastType: string) {
  const server = await listen(test);
  try {
    const response = await fetch(`${server.url}/api/v1/transactions/${transactionId}/events`, { headers });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes(`event: ${lastType}\n`)) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    return text
      .split('\n\n')
      .filter((frame) => frame.includes('event: '))
      .map((frame) => ({ id: /^id: (.*)$/m.exec(frame)?.[1], event: /^event: (.*)$/m.exec(frame)?.[1] }));
  } finally {
    await server.close();
  }
}

describe('a purchase of a capability that accepts at its price by itself', () => {
  it('is accepted, and its stream numbers its creation, freeze and acceptance 1, 2 and 3, in that order', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '10.00', auto_accept_min_ut: '5.00' });
    const { id } = await buy(test, buyer, capability.id);
    const frozen = await act(test, buyer, id, 'freeze').set('Idempotency-Key', randomUUID());
    expect(frozen.status, JSON.stringify(frozen.body)).toBe(200);
    expect(frozen.body.data.status).toBe('accepted');
    expect(await streamedEvents(buyer.headers, id, 'transaction.accepted')).toEqual([
      { id: '1', event: 'transaction.pending_freeze' },
      { id: '2', event: 'transaction.frozen' },
      { id: '3', event: 'transaction.accepted' },
    ]);
  });
});

/** Work of several statements that holds its key's lock until `release` is called. */
function workAtGate() {
  let release!: () => void;
  let started!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const atWork = new Promise<void>((resolve) => (started = resolve));
  const work = async (unit: UnitOfWork) => {
    await unit.trx.raw('SELECT 1');
    started();
    await gate;
    return 'the original';
  };
  return { work, atWork, release };
}

/** Runs `send` and answers whether it was answered before it had to wait for a lock. */
async function answeredWithoutWaiting<T>(send: () => Promise<T>) {
  let done = false;
  const sent = send().then(
    (outcome) => ({ outcome }),
    (error: unknown) => ({ error }),
  );
  void sent.then(() => (done = true));
  await until(async () => done || (await lockWaiters(db())) >= 1);
  return { done, sent };
}

describe('a claim whose statement fails for another reason than a stale prepared statement', () => {
  // A stale statement is refused before it runs, so trying it again is safe. Any other failure may
  // come after the claim was written (a connection lost after its commit): a second try would find
  // its own claim and answer 4091 for a minute, so the failure is the request's answer.
  it('is not tried again: the request gets the failure and its work never starts', async () => {
    const sequence = `probe_${randomUUID().replace(/-/g, '')}`;
    await db().raw(`CREATE SEQUENCE ${sequence}`);
    let ran = false;
    try {
      // Divides by zero on its first run only (a sequence is not rolled back with the statement).
      const read = { text: `SELECT 1 / (nextval('${sequence}') - 1) AS probe`, bindings: [] };
      const work = async () => {
        ran = true;
        return 'ran';
      };
      await expect(idempotency.run(principal(), request(), 201, work, 'one statement', read)).rejects.toThrow(/division by zero/);
      expect(ran).toBe(false);
    } finally {
      await db().raw(`DROP SEQUENCE ${sequence}`);
    }
  });
});

describe.runIf(usingRealBackends())('a retry while the request of its key is stalled past the minute', () => {
  it('is told at once that the request is in progress (4091), and the request, once done, keeps its answer', { timeout: 30_000 }, async () => {
    const [caller, sent] = [principal(), request()];
    const { work, atWork, release } = workAtGate();
    const original = idempotency.run(caller, sent, 201, work);
    try {
      await atWork;
      test.clock.advanceMs(61_000);
      // The request holds its key's lock: the retry may not take it over, nor wait for it.
      const retry = await answeredWithoutWaiting(() => idempotency.run(caller, sent, 201, async () => 'the retry'));
      expect(retry.done).toBe(true);
      expect(await retry.sent).toEqual({ error: expect.objectContaining(inProgress) });
    } finally {
      release();
    }
    expect(await original).toEqual({ data: 'the original', status: 201, replayed: false });
    expect(await idempotency.run(caller, sent, 201, async () => 'again')).toEqual({ data: 'the original', status: 201, replayed: true });
  });

  it("does not keep another key's retry from taking over a claim whose request died", { timeout: 30_000 }, async () => {
    const caller = principal();
    const [busy, died] = [request(), request()];
    void idempotency.run(caller, died, 201, dies, 'one statement');
    await expect.poll(async () => db()('idempotency_keys').where({ fingerprint: died.fingerprint }).first()).toBeDefined();
    const { work, atWork, release } = workAtGate();
    const original = idempotency.run(caller, busy, 201, work);
    try {
      await atWork;
      test.clock.advanceMs(61_000);
      const retry = await answeredWithoutWaiting(() => idempotency.run(caller, died, 201, async () => 'the retry'));
      expect(retry.done).toBe(true);
      expect(await retry.sent).toEqual({ outcome: { data: 'the retry', status: 201, replayed: false } });
    } finally {
      release();
    }
    expect(await original).toEqual({ data: 'the original', status: 201, replayed: false });
  });

  it('runs nothing of a retry whose takeover finds the claim released meanwhile, and tells it to ask again', { timeout: 30_000 }, async () => {
    const [caller, sent] = [principal(), request()];
    void idempotency.run(caller, sent, 201, dies, 'one statement');
    await expect.poll(async () => db()('idempotency_keys').where({ fingerprint: sent.fingerprint }).first()).toBeDefined();
    test.clock.advanceMs(61_000);
    let ran = false;
    // The claim's row is held, as by its request releasing it on a failure, while the retry takes it over.
    const releasing = await db().transaction();
    let retry: Promise<unknown> | undefined;
    try {
      await releasing('idempotency_keys').where({ fingerprint: sent.fingerprint }).forUpdate().first();
      retry = idempotency
        .run(caller, sent, 201, async () => {
          ran = true;
          return 'the retry';
        })
        .then(
          (outcome) => ({ outcome }),
          (error: unknown) => ({ error }),
        );
      await until(async () => (await lockWaiters(db())) >= 1);
      expect(await lockWaiters(db())).toBe(1);
      await releasing('idempotency_keys').where({ fingerprint: sent.fingerprint }).del();
      await releasing.commit();
    } finally {
      if (!releasing.isCompleted()) await releasing.rollback();
    }
    expect(await retry).toEqual({ error: expect.objectContaining(inProgress) });
    expect(ran).toBe(false);
    // The key is free now: the next retry runs the request.
    expect(await idempotency.run(caller, sent, 201, async () => 'the next retry')).toEqual({ data: 'the next retry', status: 201, replayed: false });
  });
});

describe.runIf(usingRealBackends())('a client task id taken while a retry took over the key', () => {
  it('tells the request whose key was taken over 4091 (ask again with the key), and the retry to choose a new id', { timeout: 30_000 }, async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '1.00' });
    const buyerPrincipal = principal(buyer.userId);
    const taskId = `task-${randomUUID()}`;
    const command = { capability_id: capability.id, client_task_id: taskId };
    const { transactions } = test.runtime.engine;
    // An earlier purchase, under a key long gone, named the task id.
    await transactions.create(buyerPrincipal, command, { key: randomUUID(), operation: 'test create', fingerprint: 'earlier' });
    const sent = { key: randomUUID(), operation: 'test create', fingerprint: 'same request' };
    // A purchase linked to a demand reads the demand between its claim and its check of the task
    // id. With the demands table locked, the request stalls there; a minute later its retry takes
    // the claim over and stalls there too. (The claim's own statement reads the capability and the
    // buyer's last purchase, so a lock on transactions would stall the claim itself.)
    const demand = await createDemand(test, buyer, { description: `Clean the customer records of ${taskId}` });
    const linked = { ...command, demand_id: demand.id };
    // The capability's auto-accept job reads demands too: done before the lock, it waits on nothing.
    await test.runtime.engine.autoAcceptJobs.idle();
    const send = () =>
      transactions.create(buyerPrincipal, linked, sent).then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
    const blocker = await db().transaction();
    let original: ReturnType<typeof send> | undefined;
    let retry: ReturnType<typeof send> | undefined;
    try {
      await blocker.raw('LOCK TABLE demands IN ACCESS EXCLUSIVE MODE');
      original = send();
      await until(async () => (await lockWaiters(db())) >= 1);
      expect(await lockWaiters(db())).toBe(1);
      test.clock.advanceMs(61_000);
      retry = send();
      await until(async () => (await lockWaiters(db())) >= 2);
      expect(await lockWaiters(db())).toBe(2);
    } finally {
      await blocker.rollback();
    }
    expect(await original).toEqual({ error: expect.objectContaining(inProgress) });
    expect(await retry).toEqual({ error: expect.objectContaining({ code: 4092, detail: 'a task with this id already exists; choose a new id' }) });
  });
});
