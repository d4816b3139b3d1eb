import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { budgetOf, ownedAgent, pageOrigin, setBudget } from '../helpers/agent-budgets.ts';

/**
 * Agent budget rules that the budgets mutation run (test/mutation/groups.mjs, budgets;
 * docs/decisions/operations-and-testing.md "Mutation testing") found no test for: each case is
 * what the person who owns the keys sees.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

describe("clearing one key's budget", () => {
  it("leaves the budgets of the person's other keys as they were, in the key list too", async () => {
    const first = await ownedAgent(test);
    const second = await ownedAgent(test, first.person);
    await setBudget(test, first.person, first.apiKeyId, { daily_max: '10.00' }).expect(200);
    await setBudget(test, first.person, second.apiKeyId, { daily_max: '20.00' }).expect(200);

    const cleared = await test.http.delete(`/api/v1/auth/api-keys/${first.apiKeyId}/budget`).set(first.person.headers).set('Origin', pageOrigin);
    expect(cleared.status).toBe(200);
    expect(await budgetOf(test, first.person, first.apiKeyId)).toBeNull();
    expect(await budgetOf(test, first.person, second.apiKeyId)).toMatchObject({ daily_max: '20.00', left_today: '20.00' });
    const keys = (await test.http.get('/api/v1/auth/api-keys').set(first.person.headers).expect(200)).body.data.items as Record<string, any>[];
    expect(keys.find((key) => key.id === first.apiKeyId)).toMatchObject({ budget: null });
    expect(keys.find((key) => key.id === second.apiKeyId)).toMatchObject({ budget: { daily_max: '20.00', spent_today: '0.00' } });
  });
});
