import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statementPoolOf } from '../../src/db/prepared.ts';
import { wroteNothing } from '../../src/engine/money/index.ts';
import { AppError } from '../../src/errors.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { createAgent } from '../helpers/actors.ts';
import { ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * A purchase or an invoke's hold takes a unit of the capability's limits before its one write
 * statement and gives it back when the write certainly wrote nothing; when the write may have
 * committed (its answer lost with the connection) the unit stays counted, so the limit can only
 * err on the side of refusing (engine/money/capability-limits.ts).
 */
let test: TestApp;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
});
afterAll(async () => {
  await test.close();
  await callbacks.close();
});

const invoke = (headers: Record<string, string>, capabilityId: string, key = randomUUID()) =>
  test.http.post(`/api/v1/capabilities/${capabilityId}/invoke`).set(headers).set('Idempotency-Key', key).send({ input: {} });

const usedOf = async (capabilityId: string) =>
  ((await test.runtime.engine.dependencies.db('capability_usage').where({ capability_id: capabilityId, window_kind: 'day' })) as { used: number }[]).map(
    (row) => row.used,
  );

describe('which failed writes give their capability usage back', () => {
  it('gives back after a refusal, a shortfall or an error PostgreSQL answered, and keeps it when the connection was lost', () => {
    expect(wroteNothing(new AppError('conflict', 'lost the compare-and-set'))).toBe(true);
    expect(wroteNothing(new InsufficientBalance('a', 'UT', 10n))).toBe(true);
    for (const code of ['23514', '40P01', '40001', '0A000', '57P01']) expect(wroteNothing(Object.assign(new Error('server said no'), { code }))).toBe(true);
    expect(wroteNothing(Object.assign(new Error('Knex: Timeout acquiring a connection'), { name: 'KnexTimeoutError' }))).toBe(true);
    for (const code of ['ECONNRESET', 'EPIPE', 'ETIMEDOUT']) expect(wroteNothing(Object.assign(new Error('socket'), { code }))).toBe(false);
    expect(wroteNothing(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(wroteNothing(undefined)).toBe(false);
  });

  it("an invoke refused by its key's day in the statement leaves the capability's daily unit to the next buyer", async () => {
    const capability = await createCapability(test, await createAgent(test), {
      price_ut: '1.00',
      pricing_model: 'per_query',
      callback_url: callbacks.url('/ok'),
      daily_limit: 1,
    });
    const owned = await ownedAgent(test);
    await credit(test, owned.userId, '10.00');
    await setBudget(test, owned.person, owned.apiKeyId, { daily_max: '0.50' }).expect(200);
    expect((await invoke(owned.headers, capability.id)).body).toMatchObject({ code: 4021, data: { budget: 'daily' } });
    expect(await usedOf(capability.id)).toEqual([0]);
    const plain = await createAgent(test);
    await credit(test, plain.userId, '10.00');
    expect((await invoke(plain.headers, capability.id)).status).toBe(200);
    expect((await invoke(plain.headers, capability.id)).body).toMatchObject({ code: 4291 });
    expect(await balance(test, owned)).toMatchObject({ available: '10.00', frozen: '0.00' });
  });

  it('counts exactly the holds written when budgeted invokes race past their day', async () => {
    const capability = await createCapability(test, await createAgent(test), {
      price_ut: '1.00',
      pricing_model: 'per_query',
      callback_url: callbacks.url('/ok'),
      daily_limit: 50,
    });
    const owned = await ownedAgent(test);
    await credit(test, owned.userId, '100.00');
    await setBudget(test, owned.person, owned.apiKeyId, { daily_max: '3.00' }).expect(200);
    const answers = await Promise.all(Array.from({ length: 12 }, () => invoke(owned.headers, capability.id)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(3);
    expect(answers.filter((answer) => answer.status !== 200).map((answer) => answer.body.code)).toEqual(Array(9).fill(4021));
    expect(await usedOf(capability.id)).toEqual([3]);
    expect(await balance(test, owned)).toMatchObject({ available: '97.00', frozen: '0.00' });
  });
});

describe('readiness', () => {
  it('is lost when the pool of the state-change statements cannot answer, though the main pool can', async () => {
    const own = await startTestApp();
    try {
      await own.http.get('/readyz').expect(200);
      const db = own.runtime.engine.dependencies.db;
      // Embedded, both are one connection: closing it stops the main pool too, which is also not ready.
      await statementPoolOf(db).destroy();
      const answer = await own.http.get('/readyz');
      expect(answer.status).toBe(503);
    } finally {
      await own.close().catch(() => {});
    }
  });
});
