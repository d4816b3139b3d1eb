import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { agentMarket, balance } from '../helpers/market.ts';

/**
 * Waiting retries do not poll the database (issue 15 point 8). Retries of an invoke whose callback
 * is still running wait for the transaction's next event on the bus and read the row again only at
 * a doubling interval. Measured as a user would feel it: while fifty retries wait, the server reads
 * the transaction a few times per retry, not ten times a second each.
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

/** Counts the reads of one transaction row, on either backend (PGlite through knex, PostgreSQL through pg). */
function countTransactionReads() {
  let reads = 0;
  const isRead = (text: unknown) => typeof text === 'string' && /FROM transactions WHERE id =/.test(text);
  const onQuery = (query: { sql?: string }) => {
    if (isRead(query.sql)) reads += 1;
  };
  const db = test.runtime.engine.dependencies.db;
  db.on('query', onQuery);
  const original = pg.Client.prototype.query;
  const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as { text?: string } | string;
    if (isRead(typeof config === 'string' ? config : config?.text)) reads += 1;
    return (original as (...a: unknown[]) => unknown).apply(this, args) as never;
  });
  return {
    get reads() {
      return reads;
    },
    stop() {
      db.off('query', onQuery);
      spy.mockRestore();
    },
  };
}

describe('retries of a running invoke', () => {
  it('wait on the bus: fifty retries cost a few reads each while the callback runs, and all get its answer', async () => {
    const { buyer, capability } = await agentMarket(test, '10.00', {
      pricing_model: 'per_query',
      price_ut: '2.00',
      callback_url: callbacks.url('/gate?gate=waiting'),
    });
    const key = randomUUID();
    const invoke = () =>
      test.http
        .post(`/api/v1/capabilities/${capability.id}/invoke`)
        .set(buyer.headers)
        .set('Idempotency-Key', key)
        .send({ input: { q: 'wait' } })
        .then((response) => response);
    const first = invoke();
    await expect.poll(() => callbacks.gateReached('waiting')).toBe(true);
    const counter = countTransactionReads();
    const retries = Array.from({ length: 50 }, invoke);
    const waitMs = 1_500;
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    const readsWhileWaiting = counter.reads;
    callbacks.openGate('waiting');
    const answers = await Promise.all([first, ...retries]);
    counter.stop();
    for (const answer of answers)
      expect(answer.body, JSON.stringify(answer.body)).toMatchObject({ code: 0, data: { charged_ut: '2.00', status: 'settled', result: { late: true } } });
    expect(new Set(answers.map((answer) => answer.body.data.transaction_id)).size).toBe(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '8.00', frozen: '0.00' });
    // Polling every 100 ms would be about 50 x 15 = 750 reads; a doubling wait from 100 ms is at most
    // 4 or 5 per retry in 1.5 s.
    expect(readsWhileWaiting).toBeLessThan(50 * 6);
    expect(readsWhileWaiting).toBeGreaterThanOrEqual(50);
  }, 30_000);
});
