import type { Server } from 'node:http';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { launchChromium } from '../helpers/browser.ts';
import { createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { pendingSignIn, token } from '../helpers/oauth.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * The approval page (device authorization) and the consent page (MCP sign-in) offer a budget when
 * a person connects an agent (docs/decisions/money-and-escrow.md "Agent budgets"): in a real
 * headless Chromium the person fills it in, and the key the client then gets spends within it.
 */
let test: TestApp;
let server: Server;
let base: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
beforeAll(async () => {
  const held = await holdPort();
  const port = held.port;
  base = `http://127.0.0.1:${port}`;
  test = await startTestApp({ PUBLIC_BASE_URL: base });
  server = held.server;
  held.serve(test.app);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await test?.close();
});

type Human = Awaited<ReturnType<typeof signUpHuman>>;

async function post(path: string, body: object) {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as { code: number; data: Record<string, string> };
}

async function keysOf(human: Human) {
  const response = await fetch(`${base}/api/v1/auth/api-keys`, { headers: human.headers });
  return ((await response.json()) as { data: { items: { id: string; name: string; budget: Record<string, unknown> | null }[] } }).data.items;
}

/** A page that fails the test on any script error or Content-Security-Policy violation. */
async function openPage(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text()))
      problems.push(message.text());
  });
  await page.goto(url);
  return { page, problems };
}

async function signIn(page: Page, human: Human) {
  await page.getByLabel('Email').fill(human.email);
  await page.getByLabel('Password').fill(human.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000 });

describe('the approval page', () => {
  it('a mistyped amount is shown beside its field and approves nothing; the budget chosen bounds the key the client collects', async () => {
    const human = await signUpHuman(test);
    const started = (await post('/api/v1/auth/device-auth', { agent_platform_type: 'claude_code' })).data;
    const { page, problems } = await openPage(started.verification_url_complete!);
    await signIn(page, human);
    await eventually(() => page.getByRole('heading', { name: 'Approve this application?' }).isVisible()).toBe(true);
    await expect.poll(() => page.getByRole('group', { name: 'Budget for this agent (optional)' }).isVisible()).toBe(true);

    await page.getByLabel('At most per purchase (UT)').fill('1.234');
    await page.getByRole('button', { name: 'Approve' }).click();
    await eventually(() => page.locator('#budget-per-purchase-error').isVisible()).toBe(true);
    expect(await page.getByLabel('At most per purchase (UT)').getAttribute('aria-invalid')).toBe('true');
    test.clock.advanceMs(10_000);
    expect((await post('/api/v1/auth/device-auth/poll', { device_code: started.device_code! })).code).toBe(4801);

    await page.getByLabel('At most per purchase (UT)').fill('5');
    await page.getByLabel('At most per day (UT, the day ends at midnight UTC)').fill('8.50');
    await page.getByText('Only in some categories').click();
    await page.getByLabel(/^Translation/).check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approved' }).isVisible()).toBe(true);
    expect(await page.locator('#outcome-text').textContent()).toContain('It may spend at most 5 UT a purchase, 8.50 UT a day');

    test.clock.advanceMs(10_000);
    const collected = await post('/api/v1/auth/device-auth/poll', { device_code: started.device_code! });
    expect(collected.code).toBe(0);
    const [key] = await keysOf(human);
    expect(key!.budget).toMatchObject({ per_purchase_max: '5.00', daily_max: '8.50', categories: ['translation'], spent_today: '0.00' });
    await page.getByRole('button', { name: 'Refresh the list' }).click();
    await eventually(() => page.locator('#keys-list').textContent()).toContain(
      'Budget: at most 5.00 UT a purchase, 8.50 UT a day (8.50 left today), only in 1 category',
    );

    // The key spends within it from its first purchase.
    await credit(test, human.userId, '50.00');
    const capability = await createCapability(test, await createAgent(test), { category: 'translation', price_ut: '6.00' });
    const headers = {
      'X-Api-Key': collected.data.api_key!,
      'X-Platform-User-Id': human.userId,
      'Content-Type': 'application/json',
      'Idempotency-Key': 'first',
    };
    const refused = await fetch(`${base}/api/v1/transactions`, { method: 'POST', headers, body: JSON.stringify({ capability_id: capability.id }) });
    expect(((await refused.json()) as { code: number; data: { budget: string } }).data.budget).toBe('per_purchase');
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('the consent page', () => {
  it("the budget chosen on the consent page bounds the grant's tokens; left empty, the grant has none", async () => {
    const human = await signUpHuman(test);
    for (const daily of ['3.00', '']) {
      const signIn_ = await pendingSignIn(base);
      const { page, problems } = await openPage(`${base}/oauth/consent?request=${signIn_.requestId}`);
      const landed: string[] = [];
      // The client's redirect address: the browser lands there with the code.
      await page.route(`${signIn_.client.redirect_uris[0]}**`, async (route) => {
        landed.push(route.request().url());
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
      });
      if (!(await page.getByLabel('Email').isVisible())) await page.getByRole('button', { name: 'Sign out' }).click();
      await signIn(page, human);
      await eventually(() => page.getByRole('heading', { name: 'Allow this application?' }).isVisible()).toBe(true);
      if (daily) await page.getByLabel('At most per day (UT, the day ends at midnight UTC)').fill(daily);
      await page.getByRole('button', { name: 'Allow' }).click();
      await eventually(async () => landed.length).toBe(1);
      const code = new URL(landed[0]!).searchParams.get('code')!;
      const tokens = await token(base, {
        grant_type: 'authorization_code',
        code,
        code_verifier: signIn_.verifier,
        client_id: signIn_.client.client_id,
        redirect_uri: signIn_.client.redirect_uris[0]!,
      });
      expect(tokens.status).toBe(200);
      expect(problems).toEqual([]);
      await page.close();
      const [grant] = await keysOf(human);
      if (!daily) {
        expect(grant!.budget).toBeNull();
        continue;
      }
      expect(grant!.budget).toMatchObject({ daily_max: '3.00', per_purchase_max: null });
      // Its tokens spend within it over MCP.
      await credit(test, human.userId, '10.00');
      const capability = await createCapability(test, await createAgent(test), { price_ut: '4.00' });
      const client = await connectMcp(base, { Authorization: `Bearer ${tokens.body.access_token as string}` });
      expect(await callTool(client, 'buy_capability', { capability_id: capability.id })).toMatchObject({
        isError: true,
        data: { code: 4021, data: { budget: 'daily', left_today: '3.00' } },
      });
      await client.close();
    }
  });
});
