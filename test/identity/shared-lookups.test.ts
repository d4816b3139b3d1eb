import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { readHolder } from '../helpers/held-reads.ts';
import { testAdminToken } from '../helpers/app.ts';

/**
 * Credential lookups that overlap share one (engine/common/shared-loads.ts), and the sharing may
 * not make an answer less true than the caller's own lookup: a caller after a revocation never
 * takes a key read before it, and a caller who joins a lookup that says "not linked" looks again
 * (docs/decisions/identity-and-access.md "Credential lookups are cached for 10 s"). A first
 * request's lookup is held after it read the database (helpers/held-reads.ts), and a second
 * request comes while it is held. PostgreSQL only: a held answer keeps its connection, and the
 * embedded database has one.
 */
let test: TestApp;
let holder: ReturnType<typeof readHolder>;
beforeAll(async () => {
  test = await startTestApp({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000' });
  holder = readHolder(test);
});
afterAll(() => test?.close());

const waitFor = async (condition: () => boolean) => {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 5_000) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

const me = (headers: Record<string, string>) =>
  holder.http
    .get('/api/v1/auth/me')
    .set(headers)
    .then((response) => response);

/**
 * A first request whose query matching `pattern` has read the database and waits; then
 * `meanwhile`; then a second request while the first still waits, given the time to answer
 * without it; then the first is let through. Both answers, once each request is done.
 */
async function overlapping(headers: Record<string, string>, pattern: RegExp, meanwhile: () => Promise<unknown>) {
  const mark = randomUUID();
  const held = holder.hold(mark, pattern);
  const first = me({ ...headers, 'X-Held': mark });
  await waitFor(held.reached);
  await meanwhile();
  const second = me(headers);
  await Promise.race([second, new Promise((resolve) => setTimeout(resolve, 300))]);
  held.release();
  return { first: await first, second: await second };
}

describe('a credential lookup shared by overlapping requests', () => {
  it.runIf(usingRealBackends())('is not joined by a request after a revocation: the key read before it is not taken', async () => {
    const person = await signUpHuman(test);
    const made = await test.http.post('/api/v1/auth/api-keys').set(person.headers).set('Origin', 'http://127.0.0.1:3000').send({ name: 'Script' }).expect(201);
    const { api_key: apiKey, key } = made.body.data as { api_key: string; key: { id: string } };
    const headers = { 'X-Api-Key': apiKey, 'X-Platform-User-Id': person.userId };
    // The first request reads the key while it is live; the second comes after the revocation.
    const { second: refused } = await overlapping(headers, /from "api_keys" where "key_prefix"/, () =>
      test.http.delete(`/api/v1/auth/api-keys/${key.id}`).set(person.headers).expect(200),
    );
    expect([refused.status, refused.body.code]).toEqual([401, 4010]);
    // Nor was the key read before the revocation remembered.
    expect((await test.http.get('/api/v1/auth/me').set(headers).expect(401)).body.code).toBe(4010);
  });

  it.runIf(usingRealBackends())('that answered "not linked" is not taken by a request that joined it: it looks again and finds the new link', async () => {
    const user = await signUpHuman(test);
    const key = await createApiKey(test);
    const headers = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': user.userId };
    // The first request reads before the link exists; the second comes after the link was made,
    // while the first lookup is still running, and joins it.
    const { first, second: answered } = await overlapping(headers, /from "api_key_links"/, () =>
      test.http.post(`/api/v1/admin/api-keys/${key.id}/links`).set('X-Admin-Token', testAdminToken).send({ user_id: user.userId }).expect(201),
    );
    expect(first.status).toBe(401);
    expect([answered.status, answered.body.data?.user_id]).toEqual([200, user.userId]);
  });
});
