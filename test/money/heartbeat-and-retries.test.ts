import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { agentMarket, buy } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ STREAM_HEARTBEAT_MS: '50' });
});
afterAll(() => test.close());

describe('the shared heartbeat', () => {
  it('keeps an idle stream alive with comment lines an EventSource ignores', async () => {
    const server = await listen(test);
    try {
      const { buyer, capability } = await agentMarket(test);
      const { id } = await buy(test, buyer, capability.id);
      const response = await fetch(`${server.url}/api/v1/transactions/${id}/events`, { headers: buyer.headers });
      const reader = response.body!.getReader();
      let text = '';
      while ((text.match(/: heartbeat/g) ?? []).length < 2) text += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      expect(text).toContain('event: transaction.pending_freeze');
    } finally {
      await server.close();
    }
  });
});

describe('withTransaction', () => {
  it('runs again after a serialization failure and commits once', async () => {
    const db = test.runtime.database.db;
    await db.schema.createTable('retry_probe', (table) => table.integer('value'));
    let attempts = 0;
    await withTransaction(db, async ({ trx }) => {
      attempts++;
      await trx('retry_probe').insert({ value: attempts });
      if (attempts === 1) throw Object.assign(new Error('could not serialize access'), { code: '40001' });
    });
    expect(attempts).toBe(2);
    expect(await db('retry_probe').select('value')).toEqual([{ value: 2 }]);
  });

  it('does not retry an ordinary error', async () => {
    let attempts = 0;
    await expect(
      withTransaction(test.runtime.database.db, async () => {
        attempts++;
        throw new Error('not retryable');
      }),
    ).rejects.toThrow('not retryable');
    expect(attempts).toBe(1);
  });

  // A real deadlock needs two connections; the embedded database has one.
  it.runIf(usingRealBackends())('survives a real deadlock between two database transactions', async () => {
    const db = test.runtime.database.db;
    await db.schema.createTable('deadlock_probe', (table) => {
      table.integer('id').primary();
      table.integer('value');
    });
    await db('deadlock_probe').insert([
      { id: 1, value: 0 },
      { id: 2, value: 0 },
    ]);
    let attempts = 0;
    const bothLockedFirstRow = { count: 0, release: () => {} };
    const barrier = new Promise<void>((resolve) => (bothLockedFirstRow.release = resolve));
    const cross = (first: number, second: number) =>
      withTransaction(db, async ({ trx }) => {
        attempts++;
        await trx('deadlock_probe').where({ id: first }).increment('value', 1);
        if (++bothLockedFirstRow.count === 2) bothLockedFirstRow.release();
        await barrier;
        await trx('deadlock_probe').where({ id: second }).increment('value', 1);
      });
    await Promise.all([cross(1, 2), cross(2, 1)]);
    expect(attempts).toBeGreaterThanOrEqual(3);
    expect(await db('deadlock_probe').orderBy('id').select('value')).toEqual([{ value: 2 }, { value: 2 }]);
  });
});
