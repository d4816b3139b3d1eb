import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/engine/common/index.ts';
import { createIdempotency, type Idempotency } from '../../src/engine/money/index.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * Idempotency claims left behind (docs/decisions/money-and-escrow.md "Idempotency"), on both
 * databases: a request whose process died leaves its claim in flight, holding no lock. A retry is
 * told to wait (4091) for a minute, then takes the claim over and runs; a request whose claim was
 * taken over stores nothing. The races with a request that is still alive need two connections
 * and are in idempotency.test.ts (PostgreSQL).
 */
let test: TestApp;
let idempotency: Idempotency;
beforeAll(async () => {
  test = await startTestApp();
  idempotency = createIdempotency(test.runtime.engine.dependencies);
});
afterAll(() => test.close());

const principal = (): Principal => ({ user_id: randomUUID(), caller_type: 'agent', platform: null, api_key_id: null });
const request = () => ({ key: randomUUID(), operation: 'POST /test', fingerprint: randomUUID() });
/** Work that never ends: its process died while it ran, and nothing of it was written. */
const dies = () => new Promise<never>(() => {});
/** What a retry is told while the key's request may still be at work (JSON-RPC shows the detail as its message). */
const inProgress = { code: 4091, errorName: 'idempotency_in_progress', detail: 'a request with this Idempotency-Key is still being processed' };

describe('a claim whose request died', () => {
  it('keeps retries waiting (4091) for a minute, then is taken over by one, whose answer is kept', async () => {
    const [caller, sent] = [principal(), request()];
    void idempotency.run(caller, sent, 201, dies, 'one statement');
    await expect.poll(async () => test.runtime.database.db('idempotency_keys').where({ fingerprint: sent.fingerprint }).first()).toBeDefined();

    await expect(idempotency.run(caller, sent, 201, async () => 'too early')).rejects.toMatchObject(inProgress);
    test.clock.advanceMs(59_000);
    await expect(idempotency.run(caller, sent, 201, async () => 'still too early')).rejects.toMatchObject(inProgress);
    test.clock.advanceMs(2_000);
    expect(await idempotency.run(caller, sent, 201, async () => 'the retry')).toEqual({ data: 'the retry', status: 201, replayed: false });
    expect(await idempotency.run(caller, sent, 201, async () => 'again')).toEqual({ data: 'the retry', status: 201, replayed: true });
  });

  it('stores nothing for a request whose claim was taken over, and rolls its effect back', async () => {
    const [caller, sent] = [principal(), request()];
    const { db } = test.runtime.database;
    const effect = `effect-${randomUUID()}`;
    const at = test.runtime.engine.dependencies.now();
    await expect(
      idempotency.run(caller, sent, 201, async (unit) => {
        // The effect, then a retry taking the claim over (a new token on the key's row).
        await unit.trx('idempotency_keys').insert({ scope_hash: effect, fingerprint: 'effect', state: 'in_flight', created_at: at, expires_at: at });
        await unit.trx('idempotency_keys').where({ fingerprint: sent.fingerprint, state: 'in_flight' }).update({ claim_token: randomUUID() });
        return 'the original';
      }),
    ).rejects.toMatchObject(inProgress);
    expect(await db('idempotency_keys').where({ scope_hash: effect }).first()).toBeUndefined();
    // No answer is stored under the key: a retry runs the request again.
    expect(await db('idempotency_keys').where({ fingerprint: sent.fingerprint, state: 'completed' }).first()).toBeUndefined();
    expect(await idempotency.run(caller, sent, 201, async () => 'the retry')).toMatchObject({ data: 'the retry', replayed: false });
  });

  it('refuses single-statement work that did not complete its claim, and releases the claim', async () => {
    const [caller, sent] = [principal(), request()];
    await expect(idempotency.run(caller, sent, 200, async () => 'forgot', 'one statement')).rejects.toThrow(
      'single-statement work returned without completing its idempotency claim',
    );
    expect(await idempotency.run(caller, sent, 200, async () => 'the retry')).toMatchObject({ data: 'the retry', replayed: false });
  });
});
