import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { createAgent } from '../helpers/actors.ts';
import { buy, createCapability, credit as creditIn } from '../helpers/market.ts';
import { type ConsoleWorld, credit, eventually, openConsole, signUpOnPage, startConsole } from './harness.ts';

/**
 * Journeys 4 and 5 of the console: the wallet of both spaces (history filters and cursor paging,
 * statistics, rates), and My agents (a key made with its secret shown once, used, listed with
 * how it was made, when it was last used and its budget, revoked; a device sign-in's key beside
 * it; the transactions the person's agents made). Each step is checked against the API.
 */
let world: ConsoleWorld;
let context: BrowserContext;
beforeAll(async () => {
  world = await startConsole();
  context = await world.context();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);

async function whoAmI(apiKey: string, userId: string) {
  const response = await world.test.http.get('/api/v1/auth/me').set('X-Api-Key', apiKey).set('X-Platform-User-Id', userId);
  return response.body as { code: number; data: { caller_type: string } | null };
}

describe('money and agents in the console', () => {
  it('4: the wallet shows both spaces, filters the history, pages it with the cursor, charts the statistics and tells the rates', async () => {
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `money-${unique()}@example.com`);
    for (let index = 0; index < 22; index += 1) await credit(world, me.user_id, '1.00');
    await creditIn(world.test, me.user_id, '12.50', 'UT');
    await page.goto(`${world.base}/#/wallet`);
    await page.getByRole('heading', { name: 'Wallet', level: 1 }).waitFor();
    const human = page.locator('.balance').filter({ hasText: 'Human space (CNY)' });
    expect(await human.textContent()).toContain('¥22.00');
    expect(await page.locator('.balance').filter({ hasText: 'Agent space (UT)' }).textContent()).toContain('12.50 UT');

    const rows = page.locator('.table-scroll tbody tr');
    await eventually(() => rows.count()).toBe(20);
    await page.getByRole('button', { name: 'Show more' }).click();
    // The history is the human space's account (CNY); the UT deposit is the agent space's.
    await eventually(() => rows.count()).toBe(22);
    expect(await page.getByRole('button', { name: 'Show more' }).isVisible()).toBe(false);
    const listed = await world.test.http.get('/api/v1/wallet/transactions?page_size=100').set('Authorization', `Bearer ${me.token}`);
    expect(listed.body.data.total).toBe(22);
    await page.getByLabel('Kind').selectOption('income');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await eventually(() => page.getByText('No entry matches.').isVisible()).toBe(true);
    expect(await rows.count()).toBe(0);
    await page.getByLabel('Kind').selectOption('deposit');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await eventually(() => rows.count()).toBe(20);

    expect(await page.getByRole('img', { name: 'Income, spending, deposits and held money in CNY' }).isVisible()).toBe(true);
    expect(await page.locator('.numbers').first().textContent()).toContain('¥22.00');
    expect(await page.getByText('1 UT = ').textContent()).toMatch(/^1 UT = [\d.]+ CNY$/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('5: a key made on the page shows its secret once, works, lists how it was made and when it was last used, and stops at once when revoked', async () => {
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `agents-${unique()}@example.com`);
    await page.goto(`${world.base}/#/agents`);
    await page.getByRole('heading', { name: 'My agents' }).waitFor();
    await page.getByLabel('Name of the agent').fill('Shopping bot');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const secret = page.locator('#new-secret');
    await eventually(() => secret.isVisible()).toBe(true);
    const apiKey = (await secret.textContent())!;
    expect(await page.getByText('it is shown only this once').isVisible()).toBe(true);
    expect(await whoAmI(apiKey, me.user_id)).toMatchObject({ code: 0, data: { caller_type: 'agent' } });

    // The agent buys something in the agent space with it.
    await creditIn(world.test, me.user_id, '30.00', 'UT');
    const seller = await createAgent(world.test);
    const offer = await createCapability(world.test, seller, { price_ut: '7.00' });
    const purchase = await buy(world.test, { userId: me.user_id, headers: { 'X-Api-Key': apiKey, 'X-Platform-User-Id': me.user_id } }, offer.id);

    await page.reload();
    await page.getByRole('heading', { name: 'My agents' }).waitFor();
    // The secret is never shown again.
    expect(await page.locator('#new-secret').count()).toBe(0);
    const card = page.locator('.card').filter({ hasText: 'Shopping bot' });
    await eventually(() => card.textContent()).toContain('Made on this page');
    const listed = await world.test.http.get('/api/v1/auth/api-keys').set('Authorization', `Bearer ${me.token}`);
    const key = (listed.body.data.items as { name: string; last_used_at: string | null; budget?: unknown }[]).find((item) => item.name === 'Shopping bot')!;
    expect(key.last_used_at).not.toBeNull();
    expect(await card.textContent()).not.toContain('Not used yet');
    if ('budget' in key) expect(await card.locator('.budget').textContent()).toContain(key.budget === null ? 'No budget' : 'Left today');
    const agentTransactions = page.locator('section').filter({ has: page.getByRole('heading', { name: 'What your agents bought and sold' }) });
    await eventually(() => agentTransactions.textContent()).toContain('7.00 UT');
    expect(purchase.price_ut).toBe('7.00');

    await page.getByRole('button', { name: 'Revoke Shopping bot' }).click();
    await eventually(() => card.textContent()).toContain('Revoked');
    expect((await whoAmI(apiKey, me.user_id)).code).toBe(4010);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("5: a device sign-in's key is listed as one, beside the keys made by hand", async () => {
    const { page } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `device-${unique()}@example.com`);
    const started = (await world.test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'cursor' })).body.data as {
      user_code: string;
      device_code: string;
    };
    await world.test.http
      .post('/api/v1/auth/device-auth/confirm')
      .set('Authorization', `Bearer ${me.token}`)
      .set('Origin', world.base)
      .send({ user_code: started.user_code, decision: 'approve' })
      .expect(200);
    world.test.clock.advanceMs(10_000);
    expect((await world.test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: started.device_code })).body.code).toBe(0);
    await page.goto(`${world.base}/#/agents`);
    const card = page.locator('.card').filter({ hasText: 'Cursor' });
    await eventually(() => card.textContent()).toContain('Device sign-in');
    expect(await card.textContent()).toContain('Not used yet');
    await page.close();
  });
});

describe('the key routes the console calls', () => {
  it('makes a key only for a person, from the same origin, and at most ownApiKeysPerUserMax live ones', async () => {
    const { signUpHuman } = await import('../helpers/actors.ts');
    const person = await signUpHuman(world.test);
    const make = (origin: string, name = 'bot') => world.test.http.post('/api/v1/auth/api-keys').set(person.headers).set('Origin', origin).send({ name });
    expect((await make('https://attacker.example')).body.code).toBe(4030);
    const made = await make(world.base);
    expect(made.status).toBe(201);
    expect(made.body.data).toMatchObject({ user_id: person.userId, key: { name: 'bot', origin: 'console', last_used_at: null, revoked_at: null } });
    const { limits } = await import('../../src/limits.ts');
    for (let index = 1; index < limits.ownApiKeysPerUserMax; index += 1) expect((await make(world.base, `bot ${index}`)).status).toBe(201);
    const over = await make(world.base, 'one too many');
    expect(over.body).toMatchObject({ code: 4092, data: { api_keys_max: limits.ownApiKeysPerUserMax } });
    const agent = await createAgent(world.test);
    expect((await world.test.http.post('/api/v1/auth/api-keys').set(agent.headers).set('Origin', world.base).send({ name: 'x' })).body.code).toBe(4030);
    expect((await world.test.http.get('/api/v1/auth/agent-transactions').set(agent.headers)).body.code).toBe(4030);
  });
});
