import { randomBytes } from 'node:crypto';
import type { TestApp } from './app.ts';
import { testAdminToken } from './app.ts';

/** Callers as a user would create them: humans sign up, agents get a key from the admin. */
export interface Actor {
  userId: string;
  headers: Record<string, string>;
}

export async function signUpHuman(
  test: TestApp,
  email = `human-${randomBytes(4).toString('hex')}@example.com`,
): Promise<Actor & { token: string; email: string; password: string }> {
  const password = 'correct-horse-42';
  const response = await test.http.post('/api/v1/auth/signup').send({ email, password }).expect(201);
  const { user_id: userId, access_token: token } = response.body.data;
  return { userId, token, email, password, headers: { Authorization: `Bearer ${token}` } };
}

export async function createApiKey(test: TestApp, agentPlatformType = 'custom_mcp', extra: Record<string, unknown> = {}) {
  const response = await test.http
    .post('/api/v1/admin/api-keys')
    .set('X-Admin-Token', testAdminToken)
    .send({ agent_platform_type: agentPlatformType, ...extra })
    .expect(201);
  return response.body.data as { id: string; api_key: string };
}

export async function linkUser(test: TestApp, apiKeyId: string, userId: string) {
  await test.http.post(`/api/v1/admin/api-keys/${apiKeyId}/links`).set('X-Admin-Token', testAdminToken).send({ user_id: userId }).expect(201);
}

/** An agent: a human account's user id, acted for by a platform key linked to it. */
export async function createAgent(test: TestApp, key?: { id: string; api_key: string }): Promise<Actor & { apiKey: string; apiKeyId: string }> {
  const human = await signUpHuman(test);
  const platformKey = key ?? (await createApiKey(test));
  await linkUser(test, platformKey.id, human.userId);
  return {
    userId: human.userId,
    apiKey: platformKey.api_key,
    apiKeyId: platformKey.id,
    headers: { 'X-Api-Key': platformKey.api_key, 'X-Platform-User-Id': human.userId },
  };
}
