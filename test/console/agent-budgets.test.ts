import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { createCapability, credit as creditIn } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { pendingSignIn, token } from '../helpers/oauth.ts';
import { type ConsoleWorld, eventually, openConsole, seriousViolations, signUpOnPage, startConsole } from './harness.ts';

/**
 * Journey 5 of the console, the budgets (docs/decisions/money-and-escrow.md "Agent budgets"): a
 * person sets a budget on a key on My agents, their agent (the API with that key, not the page)
 * buys within it and is refused over it with 4021, the page shows what is left, the person raises
 * it and the purchase passes; an MCP client connected through the consent page with a budget is
 * listed, used and revoked on the page. Money is checked through the API at each step.
 */
let world: ConsoleWorld;
let context: BrowserContext;
beforeAll(async () => {
  world = await startConsole();
  context = await world.context();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
type Envelope = { code: number; message: string; data: Record<string, any> };

/** What an agent does with its key: create the purchase, then freeze its price (where the budget is charged). */
async function agentBuys(apiKey: string, userId: string, capabilityId: string): Promise<Envelope> {
  const headers = { 'X-Api-Key': apiKey, 'X-Platform-User-Id': userId, 'Content-Type': 'application/json' };
  const post = async (path: string, body: object) =>
    (await (
      await fetch(`${world.base}${path}`, { method: 'POST', headers: { ...headers, 'Idempotency-Key': crypto.randomUUID() }, body: JSON.stringify(body) })
    ).json()) as Envelope;
  const created = await post('/api/v1/transactions', { capability_id: capabilityId });
  if (created.code !== 0) return created;
  return post(`/api/v1/transactions/${created.data.id as string}/freeze`, {});
}

async function agentWallet(token: string) {
  const response = await world.test.http.get('/api/v1/wallet/').set('Authorization', `Bearer ${token}`).expect(200);
  return response.body.data.ut as { available: string; frozen: string };
}

async function keyOf(token: string, name: string) {
  const listed = await world.test.http.get('/api/v1/auth/api-keys?page_size=100').set('Authorization', `Bearer ${token}`).expect(200);
  return (
    listed.body.data.items as { id: string; name: string; last_used_at: string | null; revoked_at: string | null; budget: Record<string, any> | null }[]
  ).find((item) => item.name === name)!;
}

/** The page at 390 px: nothing wider than the screen, no serious violation; then back to the desktop. */
async function checkPhoneAndAxe(page: Page) {
  expect(await seriousViolations(page)).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  expect(await seriousViolations(page)).toEqual([]);
  await page.setViewportSize({ width: 1280, height: 800 });
}

describe('agent budgets in the console', () => {
  it('5: a budget set on the page bounds the key: a purchase within passes, one over is refused with 4021 and what is left shows; raised, it passes', async () => {
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `budget-${unique()}@example.com`);
    await page.goto(`${world.base}/#/agents`);
    await page.getByRole('heading', { name: 'My agents' }).waitFor();
    await page.getByLabel('Name of the agent').fill('Budget bot');
    await page.getByRole('button', { name: 'Create the key' }).click();
    await eventually(() => page.locator('#new-secret').isVisible()).toBe(true);
    const apiKey = (await page.locator('#new-secret').textContent())!;
    const card = page.locator('.card').filter({ hasText: 'Budget bot' });
    await eventually(() => card.textContent()).toContain('No budget');

    await creditIn(world.test, me.user_id, '50.00');
    const seller = await createAgent(world.test);
    const offer = await createCapability(world.test, seller, { price_ut: '6.00' });

    // Set with the keyboard: the disclosure opens with Enter, the fields are labelled.
    await card.getByText('Set a budget for Budget bot').focus();
    await page.keyboard.press('Enter');
    const perPurchase = card.getByLabel('At most per purchase (UT)');
    const daily = card.getByLabel('At most per day (UT, the day ends at midnight UTC)');
    await perPurchase.fill('1.234');
    await daily.fill('10');
    await card.getByRole('button', { name: 'Save the budget of Budget bot' }).click();
    // The page's own check, beside the field, before anything is sent.
    await eventually(() => perPurchase.getAttribute('aria-invalid')).toBe('true');
    expect(await card.locator('.field-error').first().textContent()).toContain('at most two decimals');
    // The API's own message beside its field: a capability id that is no id.
    await perPurchase.fill('10');
    await card.getByLabel('Only these capabilities (optional)').fill('not-an-id');
    await card.getByRole('button', { name: 'Save the budget of Budget bot' }).click();
    const capabilities = card.getByLabel('Only these capabilities (optional)');
    await eventually(() => capabilities.getAttribute('aria-invalid')).toBe('true');
    const message = await page.locator(`#${(await capabilities.getAttribute('id'))!}-error`).textContent();
    expect(message).toBeTruthy();
    expect(message).not.toContain('{');
    expect((await keyOf(me.token, 'Budget bot')).budget).toBeNull();
    await capabilities.fill('');
    await card.getByRole('button', { name: 'Save the budget of Budget bot' }).click();
    await eventually(() => card.locator('.budget-left').textContent()).toBe('10.00 UT');
    const key = await keyOf(me.token, 'Budget bot');
    expect(key.budget).toMatchObject({ per_purchase_max: '10.00', daily_max: '10.00', categories: null, capability_ids: null, spent_today: '0.00' });
    await checkPhoneAndAxe(page);

    // The agent buys within it, then over it: refused with 4021, nothing moves.
    expect(await agentBuys(apiKey, me.user_id, offer.id)).toMatchObject({ code: 0, data: { status: 'frozen' } });
    expect(await agentWallet(me.token)).toMatchObject({ available: '44.00', frozen: '6.00' });
    const refused = await agentBuys(apiKey, me.user_id, offer.id);
    expect(refused).toMatchObject({ code: 4021, message: 'agent_budget_exceeded', data: { budget: 'daily', left_today: '4.00', api_key_id: key.id } });
    expect(await agentWallet(me.token)).toMatchObject({ available: '44.00', frozen: '6.00' });
    await page.reload();
    const reloaded = page.locator('.card').filter({ hasText: 'Budget bot' });
    await eventually(() => reloaded.locator('.budget-left').textContent()).toBe('4.00 UT');
    expect(await reloaded.locator('.budget').textContent()).toContain('6.00 UT');

    // Raised on the page, the same purchase passes.
    await reloaded.getByText('Change the budget of Budget bot').click();
    await reloaded.getByLabel('At most per day (UT, the day ends at midnight UTC)').fill('20');
    await reloaded.getByRole('button', { name: 'Save the new budget of Budget bot' }).click();
    await eventually(() => reloaded.locator('.budget-left').textContent()).toBe('14.00 UT');
    expect((await keyOf(me.token, 'Budget bot')).budget).toMatchObject({ daily_max: '20.00', left_today: '14.00' });
    expect(await agentBuys(apiKey, me.user_id, offer.id)).toMatchObject({ code: 0, data: { status: 'frozen' } });
    expect(await agentWallet(me.token)).toMatchObject({ available: '38.00', frozen: '12.00' });
    await page.reload();
    await eventually(() => page.locator('.card').filter({ hasText: 'Budget bot' }).locator('.budget-left').textContent()).toBe('8.00 UT');

    // Removed: no bound again.
    await page.getByRole('button', { name: 'Remove the budget of Budget bot' }).click();
    await eventually(() => page.locator('.card').filter({ hasText: 'Budget bot' }).textContent()).toContain('No budget');
    expect((await keyOf(me.token, 'Budget bot')).budget).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('5: an MCP client connected on the consent page with a budget is listed, spends within it, and is refused once revoked on the page', async () => {
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `mcp-${unique()}@example.com`);
    await creditIn(world.test, me.user_id, '30.00');
    const offer = await createCapability(world.test, await createAgent(world.test), { price_ut: '4.00' });

    // The client registers and starts the authorization-code flow with PKCE; the same tab, signed
    // in on the console, is sent to the consent page (one session with it).
    const signIn = await pendingSignIn(world.base);
    const landed: string[] = [];
    await page.route(`${signIn.client.redirect_uris[0]}**`, async (route) => {
      landed.push(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
    });
    await page.goto(`${world.base}/oauth/consent?request=${signIn.requestId}`);
    await eventually(async () => (await page.getByLabel('Email').isVisible()) || (await page.getByRole('button', { name: 'Allow' }).isVisible())).toBe(true);
    expect(await page.getByLabel('Email').isVisible()).toBe(false);
    await eventually(() => page.getByRole('heading', { name: 'Allow this application?' }).isVisible()).toBe(true);
    await page.getByLabel('At most per day (UT, the day ends at midnight UTC)').fill('9');
    await page.getByRole('button', { name: 'Allow' }).click();
    await eventually(async () => landed.length).toBe(1);
    const tokens = await token(world.base, {
      grant_type: 'authorization_code',
      code: new URL(landed[0]!).searchParams.get('code')!,
      code_verifier: signIn.verifier,
      client_id: signIn.client.client_id,
      redirect_uri: signIn.client.redirect_uris[0]!,
    });
    expect(tokens.status).toBe(200);

    // My agents lists the connection: its name, kind, when it was made, not used yet, its budget.
    await page.goto(`${world.base}/#/agents`);
    const card = page.locator('.card').filter({ hasText: 'Test client (MCP sign-in)' });
    await eventually(() => card.textContent()).toContain('MCP connection');
    expect(await card.textContent()).toContain('Not used yet');
    expect(await card.locator('.budget-left').textContent()).toBe('9.00 UT');
    expect(await card.textContent()).toMatch(/Created\d{1,2} \w+ \d{4}/);

    // The agent buys with a tool; the page shows the use and what is left.
    const client = await connectMcp(world.base, { Authorization: `Bearer ${tokens.body.access_token as string}` });
    expect(await callTool(client, 'buy_capability', { capability_id: offer.id })).toMatchObject({ isError: false });
    expect(await agentWallet(me.token)).toMatchObject({ available: '26.00', frozen: '4.00' });
    expect(await callTool(client, 'buy_capability', { capability_id: offer.id })).toMatchObject({ isError: false });
    expect(await callTool(client, 'buy_capability', { capability_id: offer.id })).toMatchObject({
      isError: true,
      data: { code: 4021, data: { budget: 'daily', left_today: '1.00' } },
    });
    expect(await agentWallet(me.token)).toMatchObject({ available: '22.00', frozen: '8.00' });
    await client.close();
    await page.reload();
    const used = page.locator('.card').filter({ hasText: 'Test client (MCP sign-in)' });
    await eventually(() => used.locator('.budget-left').textContent()).toBe('1.00 UT');
    expect(await used.textContent()).not.toContain('Not used yet');
    expect((await keyOf(me.token, 'Test client (MCP sign-in)')).last_used_at).not.toBeNull();

    // Revoked on the page: the token is refused from then on.
    await page.getByRole('button', { name: 'Revoke Test client (MCP sign-in)' }).click();
    await eventually(() => used.textContent()).toContain('Revoked');
    expect((await keyOf(me.token, 'Test client (MCP sign-in)')).revoked_at).not.toBeNull();
    const refused = await fetch(`${world.base}/mcp`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${tokens.body.access_token as string}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(refused.status).toBe(401);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("5: each key's transactions are listed under that key, the other key's left out", async () => {
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const me = await signUpOnPage(page, `per-key-${unique()}@example.com`);
    await creditIn(world.test, me.user_id, '40.00');
    const make = async (name: string) =>
      (await world.test.http.post('/api/v1/auth/api-keys').set('Authorization', `Bearer ${me.token}`).set('Origin', world.base).send({ name }).expect(201)).body
        .data as { api_key: string; key: { id: string } };
    const reader = await make('Reader bot');
    const painter = await make('Painter bot');
    const seller = await createAgent(world.test);
    const cheap = await createCapability(world.test, seller, { price_ut: '3.00' });
    const dear = await createCapability(world.test, seller, { price_ut: '5.00' });
    expect((await agentBuys(reader.api_key, me.user_id, cheap.id)).code).toBe(0);
    expect((await agentBuys(painter.api_key, me.user_id, dear.id)).code).toBe(0);
    expect((await agentBuys(painter.api_key, me.user_id, dear.id)).code).toBe(0);
    expect(await agentWallet(me.token)).toMatchObject({ available: '27.00', frozen: '13.00' });
    const ofKey = async (id: string) =>
      (await world.test.http.get(`/api/v1/auth/agent-transactions?api_key_id=${id}`).set('Authorization', `Bearer ${me.token}`).expect(200)).body.data
        .items as { api_key_id: string; price_ut: string }[];
    expect((await ofKey(reader.key.id)).map((item) => [item.api_key_id, item.price_ut])).toEqual([[reader.key.id, '3.00']]);
    expect((await ofKey(painter.key.id)).map((item) => item.api_key_id)).toEqual([painter.key.id, painter.key.id]);

    await page.goto(`${world.base}/#/agents`);
    await page.getByRole('heading', { name: 'My agents' }).waitFor();
    const readerCard = page.locator('.card').filter({ hasText: 'Reader bot' });
    const painterCard = page.locator('.card').filter({ hasText: 'Painter bot' });
    // Opened with the keyboard.
    await readerCard.getByText('Transactions through Reader bot').focus();
    await page.keyboard.press('Enter');
    await eventually(() => readerCard.locator('.key-transactions .row').count()).toBe(1);
    expect(await readerCard.locator('.key-transactions').textContent()).toContain('3.00 UT');
    expect(await readerCard.locator('.key-transactions').textContent()).not.toContain('5.00 UT');
    await painterCard.getByText('Transactions through Painter bot').click();
    await eventually(() => painterCard.locator('.key-transactions .row').count()).toBe(2);
    expect(await painterCard.locator('.key-transactions').textContent()).not.toContain('3.00 UT');
    // All the agents' transactions together below.
    const all = page.locator('section').filter({ has: page.getByRole('heading', { name: 'What your agents bought and sold' }) });
    await eventually(() => all.locator('.row').count()).toBe(3);
    await checkPhoneAndAxe(page);
    expect(problems).toEqual([]);
    await page.close();
  });
});
