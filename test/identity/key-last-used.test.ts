import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

/**
 * "Last used" of a person's keys (docs/decisions/web-console.md): a request with a key notes its
 * use, at most once a minute per key and instance, without delaying the request; the key list
 * shows it, to the minute.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PUBLIC_BASE_URL: 'http://127.0.0.1:3000' });
});
afterAll(() => test?.close());

describe("a key's last use", () => {
  it('is null until the key is used, then the time of its use, written again only a minute later', async () => {
    const person = await signUpHuman(test);
    const made = await test.http.post('/api/v1/auth/api-keys').set(person.headers).set('Origin', 'http://127.0.0.1:3000').send({ name: 'Helper' }).expect(201);
    const { api_key: apiKey, key } = made.body.data as { api_key: string; key: { id: string; origin: string; last_used_at: string | null } };
    expect(key).toMatchObject({ origin: 'console', last_used_at: null });
    const lastUsed = async () => {
      const listed = await test.http.get('/api/v1/auth/api-keys').set(person.headers).expect(200);
      return (listed.body.data.items as { id: string; last_used_at: string | null }[]).find((item) => item.id === key.id)!.last_used_at;
    };
    const use = () => test.http.get('/api/v1/auth/me').set('X-Api-Key', apiKey).set('X-Platform-User-Id', person.userId).expect(200);

    await use();
    await expect.poll(lastUsed).not.toBeNull();
    const first = Date.parse((await lastUsed())!);
    // Half a minute later the use is not written again: had it been, the write a minute after the
    // first would find that newer time there and keep it, and the time read last would be 30 s on.
    test.clock.advanceMs(limits.apiKeyLastUsedResolutionMs / 2);
    await use();
    test.clock.advanceMs(limits.apiKeyLastUsedResolutionMs / 2 + 1_000);
    await use();
    await expect.poll(async () => Date.parse((await lastUsed())!)).not.toBe(first);
    expect(Date.parse((await lastUsed())!) - first).toBeGreaterThanOrEqual(limits.apiKeyLastUsedResolutionMs + 1_000);
  });
});
