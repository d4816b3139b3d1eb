import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemAccountId } from '../../src/store/accounts.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * The ledger's rules hold in the database itself, whatever code writes to it: these statements go
 * around the engine, straight through the application's own database handle.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const db = () => test.runtime.database.db;
const external = systemAccountId('external', 'UT');
const fees = systemAccountId('platform_fee', 'UT');
const externalCny = systemAccountId('external', 'CNY');

const entry = (movementId: string, accountId: string, currency: string, amount: number) => ({
  movement_id: movementId,
  account_id: accountId,
  currency,
  bucket: 'available',
  type: 'deposit',
  amount: String(amount),
  balance_after: '0',
  description: 'written around the engine',
});
const entryCount = async () => Number((await db()('ledger_entries').count<{ count: string }[]>('* as count'))[0]!.count);

describe('the ledger in the database', () => {
  it('accepts a movement whose entries sum to zero per currency', async () => {
    const movementId = randomUUID();
    await db()('ledger_entries').insert([entry(movementId, external, 'UT', -100), entry(movementId, fees, 'UT', 100)]);
    expect(Number((await db()('ledger_entries').where({ movement_id: movementId }).count<{ count: string }[]>('* as count'))[0]!.count)).toBe(2);
  });

  it('refuses a movement that does not sum to zero, and keeps none of it', async () => {
    const before = await entryCount();
    const movementId = randomUUID();
    await expect(db()('ledger_entries').insert([entry(movementId, external, 'UT', -100), entry(movementId, fees, 'UT', 90)])).rejects.toThrow(
      /does not sum to zero/,
    );
    await expect(db()('ledger_entries').insert([entry(randomUUID(), fees, 'UT', 5)])).rejects.toThrow(/does not sum to zero/);
    expect(await entryCount()).toBe(before);
  });

  it('refuses a movement that sums to zero only across currencies', async () => {
    const before = await entryCount();
    const movementId = randomUUID();
    await expect(db()('ledger_entries').insert([entry(movementId, external, 'UT', -100), entry(movementId, externalCny, 'CNY', 100)])).rejects.toThrow(
      /does not sum to zero/,
    );
    expect(await entryCount()).toBe(before);
  });

  it('refuses to update, delete or truncate entries', async () => {
    const movementId = randomUUID();
    await db()('ledger_entries').insert([entry(movementId, external, 'UT', -7), entry(movementId, fees, 'UT', 7)]);
    const before = await entryCount();
    await expect(db()('ledger_entries').where({ movement_id: movementId }).update({ amount: '8' })).rejects.toThrow(/append-only/);
    await expect(db()('ledger_entries').where({ movement_id: movementId }).del()).rejects.toThrow(/append-only/);
    await expect(db().raw('TRUNCATE ledger_entries')).rejects.toThrow(/append-only/);
    await expect(db().raw('TRUNCATE accounts, ledger_entries CASCADE')).rejects.toThrow(/append-only/);
    expect(await entryCount()).toBe(before);
    const amounts = await db()('ledger_entries').where({ movement_id: movementId }).orderBy('id').pluck('amount');
    expect(amounts.map(String)).toEqual(['-7', '7']);
  });
});
