import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UnitOfWork } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createIdempotency, fingerprintOf, type Idempotency } from '../../src/engine/money/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Idempotency's rules (src/engine/money/idempotency.ts) that the money path's mutation run of
 * that file (docs/decisions/operations-and-testing.md "money-path (issue 30)") found no test for:
 * which requests count as the same, what a key's reuse is told, the row the claim's statement
 * reads for the work, and that one request's failure or takeover touches no other key.
 */
let test: TestApp;
let idempotency: Idempotency;
beforeAll(async () => {
  test = await startTestApp();
  idempotency = createIdempotency(test.runtime.engine.dependencies);
});
afterAll(() => test.close());

const principal = (): Principal => ({ user_id: randomUUID(), caller_type: 'agent', platform: null, api_key_id: null });
const request = (fingerprint: string = randomUUID()) => ({ key: randomUUID(), operation: 'POST /test', fingerprint });
const db = () => test.runtime.database.db;

describe("a request's fingerprint", () => {
  it('tells apart requests that differ in a number, an amount, or an array from an object', () => {
    expect(fingerprintOf({ booked_hours: 2 })).not.toBe(fingerprintOf({ booked_hours: 3 }));
    expect(fingerprintOf({ max_price: 150n })).not.toBe(fingerprintOf({ max_price: 151n }));
    expect(fingerprintOf({ max_price: 150n })).toBe(fingerprintOf({ max_price: '150' }));
    expect(fingerprintOf({ tags: ['a', 'b'] })).not.toBe(fingerprintOf({ tags: { 0: 'a', 1: 'b' } }));
    expect(fingerprintOf({ tags: ['a', 'b'] })).not.toBe(fingerprintOf({ tags: ['b', 'a'] }));
    expect(fingerprintOf({ a: 1, b: { c: null, d: true } })).toBe(fingerprintOf({ b: { d: true, c: null }, a: 1 }));
    expect(fingerprintOf(undefined)).toBe(fingerprintOf(null));
  });
});

describe('a key sent again', () => {
  it('with another request is refused with 4220, saying so', async () => {
    const caller = principal();
    const first = request();
    await idempotency.run(caller, first, 201, async () => 'done');
    await expect(idempotency.run(caller, { ...first, fingerprint: randomUUID() }, 201, async () => 'other')).rejects.toMatchObject({
      code: 4220,
      detail: 'this Idempotency-Key was used with a different request',
    });
  });

  it('still replays its answer after another key of the same caller failed or was taken over', async () => {
    const caller = principal();
    const kept = request();
    expect(await idempotency.run(caller, kept, 201, async () => 'kept')).toEqual({ data: 'kept', status: 201, replayed: false });
    await expect(idempotency.run(caller, request(), 201, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    // A request whose process died, taken over a minute later by its retry.
    const died = request();
    void idempotency.run(caller, died, 201, () => new Promise<never>(() => {}), 'one statement');
    await expect.poll(async () => db()('idempotency_keys').where({ fingerprint: died.fingerprint }).first()).toBeDefined();
    test.clock.advanceMs(61_000);
    expect(await idempotency.run(caller, died, 201, async () => 'the retry')).toEqual({ data: 'the retry', status: 201, replayed: false });
    expect(await idempotency.run(caller, kept, 201, async () => 'again')).toEqual({ data: 'kept', status: 201, replayed: true });
  });
});

describe("the claim's statement", () => {
  it('hands the work the row it read, or no row when there is none, only for one-statement work', async () => {
    const seen: unknown[] = [];
    const work = async (unit: UnitOfWork) => {
      seen.push(unit.prefetched);
      throw new Error('only looking');
    };
    const read = (id: string) => ({ text: 'SELECT scope_hash, fingerprint, state FROM idempotency_keys WHERE fingerprint = ?', bindings: [id] });
    const caller = principal();
    const existing = request();
    await idempotency.run(caller, existing, 201, async () => 'done');
    await expect(idempotency.run(caller, request(), 201, work, 'one statement', read(existing.fingerprint))).rejects.toThrow('only looking');
    await expect(idempotency.run(caller, request(), 201, work, 'one statement', read(randomUUID()))).rejects.toThrow('only looking');
    await expect(idempotency.run(caller, request(), 201, work, 'several statements', read(existing.fingerprint))).rejects.toThrow('only looking');
    expect(seen).toEqual([{ row: { scope_hash: expect.any(String), fingerprint: existing.fingerprint, state: 'completed' } }, { row: null }, undefined]);
  });
  it("reads again once when a migration changed the table its read returns (the claim's prepared statement is renewed)", async () => {
    const table = `read_${randomUUID().replace(/-/g, '')}`;
    await db().raw(`CREATE TABLE ${table} (id int)`);
    await db()(table).insert({ id: 1 });
    const seen: unknown[] = [];
    const work = async (unit: UnitOfWork) => {
      seen.push(unit.prefetched);
      throw new Error('only looking');
    };
    const read = { text: `SELECT * FROM ${table} WHERE id = ?`, bindings: [1] };
    try {
      await expect(idempotency.run(principal(), request(), 201, work, 'one statement', read)).rejects.toThrow('only looking');
      await db().raw(`ALTER TABLE ${table} ADD COLUMN extra int DEFAULT 7`);
      await expect(idempotency.run(principal(), request(), 201, work, 'one statement', read)).rejects.toThrow('only looking');
      expect(seen).toEqual([{ row: { id: 1 } }, { row: { id: 1, extra: 7 } }]);
    } finally {
      await db().raw(`DROP TABLE ${table}`);
    }
  });
});

describe('work without a key', () => {
  it('runs one-statement work on the pool itself, and other work in a database transaction it rolls back on failure', async () => {
    const { db: pool } = test.runtime.engine.dependencies;
    const table = `work_${randomUUID().replace(/-/g, '')}`;
    await db().raw(`CREATE TABLE ${table} (id int)`);
    try {
      const single = await idempotency.run(principal(), null, 200, async (unit) => unit.trx === pool, 'one statement');
      expect(single).toEqual({ data: true, status: 200, replayed: false });
      const several = idempotency.run(principal(), null, 200, async (unit) => {
        await unit.trx(table).insert({ id: 1 });
        throw new Error('the second statement failed');
      });
      await expect(several).rejects.toThrow('the second statement failed');
      expect(await db()(table).pluck('id')).toEqual([]);
    } finally {
      await db().raw(`DROP TABLE ${table}`);
    }
  });
});
