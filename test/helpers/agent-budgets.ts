import type { Actor } from './actors.ts';
import { signUpHuman } from './actors.ts';
import type { TestApp } from './app.ts';

/**
 * A person and an agent key of their own, as a device approval issues it (docs/decisions/
 * identity-and-access.md "Device authorization"), and the agent budget calls the person makes on
 * it (docs/decisions/money-and-escrow.md "Agent budgets").
 */
export const pageOrigin = 'http://127.0.0.1:3000';

export type Person = Awaited<ReturnType<typeof signUpHuman>>;

export interface OwnedAgent extends Actor {
  apiKey: string;
  apiKeyId: string;
  person: Person;
}

/** Approves a device request as `person` (optionally with a budget chosen on the page) and collects the key. */
export async function ownedAgent(test: TestApp, person?: Person, budget?: Record<string, unknown>): Promise<OwnedAgent> {
  const owner = person ?? (await signUpHuman(test));
  const started = (await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'claude_code' }).expect(201)).body.data;
  const confirmed = await test.http
    .post('/api/v1/auth/device-auth/confirm')
    .set(owner.headers)
    .set('Origin', pageOrigin)
    .send({ user_code: started.user_code, decision: 'approve', ...(budget ? { budget } : {}) });
  if (confirmed.body.code !== 0) throw new Error(`confirm: ${JSON.stringify(confirmed.body)}`);
  test.clock.advanceMs(10_000);
  const polled = (await test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: started.device_code }).expect(200)).body.data;
  const keys = (await test.http.get('/api/v1/auth/api-keys').set(owner.headers).expect(200)).body.data.items as { id: string; key_prefix: string }[];
  const key = keys.find((item) => polled.api_key.startsWith(`mk_${item.key_prefix}_`)) ?? keys[0]!;
  return {
    userId: owner.userId,
    apiKey: polled.api_key,
    apiKeyId: key.id,
    person: owner,
    headers: { 'X-Api-Key': polled.api_key, 'X-Platform-User-Id': owner.userId },
  };
}

export function setBudget(test: TestApp, person: Person, keyId: string, budget: Record<string, unknown>) {
  return test.http.put(`/api/v1/auth/api-keys/${keyId}/budget`).set(person.headers).set('Origin', pageOrigin).send(budget);
}

export async function budgetOf(test: TestApp, person: Person, keyId: string) {
  return (await test.http.get(`/api/v1/auth/api-keys/${keyId}/budget`).set(person.headers).expect(200)).body.data.budget as Record<string, any> | null;
}
