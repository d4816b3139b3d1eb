import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimIsHeld, completeClaim } from '../../src/store/claims.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';

/**
 * The one idempotency completion (src/store/claims.ts), without timing: a request whose claim was
 * taken over by a retry (a new claim token on the same key) must not store its response, and the
 * claim's new owner must. On PostgreSQL the race itself is tested in idempotency.test.ts; here the
 * rule is checked directly, so that dropping `claim_token = ?` fails on every database.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

async function claimRow(token: string) {
  const scopeHash = randomUUID().replace(/-/g, '');
  const at = new Date();
  await test.runtime.engine.dependencies.db('idempotency_keys').insert({
    scope_hash: scopeHash,
    fingerprint: 'f'.repeat(64),
    state: 'in_flight',
    claim_token: token,
    created_at: at,
    expires_at: new Date(at.getTime() + 60_000),
  });
  return scopeHash;
}

const stateOf = async (scopeHash: string) =>
  (await test.runtime.engine.dependencies.db('idempotency_keys').where({ scope_hash: scopeHash }).first('state', 'response_status')) as {
    state: string;
    response_status: number | null;
  };

describe('completing an idempotency claim', () => {
  it('stores nothing for a request whose claim another request took over, and the new owner completes it', async () => {
    const [original, takeover] = [randomUUID(), randomUUID()];
    const scopeHash = await claimRow(takeover);
    const { db } = test.runtime.engine.dependencies;
    const completion = (token: string, status: number) => ({ scopeHash, token, lockId: '42', responseStatus: status, responseBody: { by: token } });

    expect(await claimIsHeld(db, { scopeHash, token: original })).toBe(false);
    expect(await db.transaction((trx) => completeClaim(trx, completion(original, 201)))).toBe(false);
    expect(await stateOf(scopeHash)).toEqual({ state: 'in_flight', response_status: null });

    expect(await claimIsHeld(db, { scopeHash, token: takeover })).toBe(true);
    expect(await db.transaction((trx) => completeClaim(trx, completion(takeover, 200)))).toBe(true);
    expect(await stateOf(scopeHash)).toEqual({ state: 'completed', response_status: 200 });
    // Completed: not held by anyone any more.
    expect(await claimIsHeld(db, { scopeHash, token: takeover })).toBe(false);
  });
});
