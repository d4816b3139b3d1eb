import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { launchChromium } from '../helpers/browser.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * The verification page end to end in a real headless Chromium: a client starts device
 * authorization over HTTP, a person opens verification_url_complete, signs in and answers, and
 * the client's poll gets the outcome. One server and one browser for the file.
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

/** The client's side, over plain HTTP as an agent application would call it. */
async function clientCall(path: string, body: object, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return (await response.json()) as { code: number; data: Record<string, string> };
}

async function startFlow(platform = 'claude_code') {
  const started = await clientCall('/api/v1/auth/device-auth', { agent_platform_type: platform });
  expect(started.code).toBe(0);
  return started.data as { device_code: string; user_code: string; verification_url: string; verification_url_complete: string };
}

/** One poll after the interval, as the client waits it. */
function poll(deviceCode: string) {
  test.clock.advanceMs(10_000);
  return clientCall('/api/v1/auth/device-auth/poll', { device_code: deviceCode });
}

async function whoAmI(apiKey: string, userId: string) {
  const response = await fetch(`${base}/api/v1/auth/me`, { headers: { 'X-Api-Key': apiKey, 'X-Platform-User-Id': userId } });
  return (await response.json()) as { code: number; data: { caller_type: string } };
}

/** A page that fails the test on any script error or Content-Security-Policy violation. */
async function openPage(url: string, using: Awaited<ReturnType<typeof launchChromium>> = browser): Promise<{ page: Page; problems: string[] }> {
  const page = await using.context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  // Chromium logs every 4xx answer as an error; the page expects those (a wrong code is a 4040).
  page.on('console', (message) => {
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text()))
      problems.push(message.text());
  });
  const response = await page.goto(url);
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  return { page, problems };
}

/** Waits for what the page shows after a call; password hashing on a busy machine can take seconds. */
const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000 });

// Runs in the page; written as text because this project's TypeScript has no DOM types.
const focusedId = (page: Page) => page.evaluate<string>("document.activeElement ? document.activeElement.id : ''");

describe('the device verification page', () => {
  it('signs in, approves, and the client collects a working key; the person then revokes it on the page', async () => {
    const human = await signUpHuman(test);
    const flow = await startFlow('claude_code');
    expect((await poll(flow.device_code)).code).toBe(4801);

    const { page, problems } = await openPage(flow.verification_url_complete);
    await page.getByLabel('Email').fill(human.email);
    await page.getByLabel('Password').fill(human.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approve this application?' }).isVisible()).toBe(true);
    expect(await page.locator('#request-platform').textContent()).toBe('Claude Code');
    expect(await page.locator('#request-code').textContent()).toBe(flow.user_code);
    await page.getByRole('button', { name: 'Approve' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approved' }).isVisible()).toBe(true);

    const collected = await poll(flow.device_code);
    expect(collected).toMatchObject({ code: 0, data: { status: 'approved', user_id: human.userId, agent_platform_type: 'claude_code' } });
    const apiKey = collected.data.api_key!;
    expect((await whoAmI(apiKey, human.userId)).data.caller_type).toBe('agent');

    await page.getByRole('button', { name: 'Refresh the list' }).click();
    const revoke = page.getByRole('button', { name: /^Revoke Claude Code/ });
    await revoke.click();
    await eventually(() => page.locator('#keys-list').textContent()).toContain('Revoked');
    expect(await page.getByRole('status').textContent()).toContain('revoked');
    expect((await whoAmI(apiKey, human.userId)).code).toBe(4010);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('signs up a new person, who denies; the client is told 4804', async () => {
    const flow = await startFlow('cursor');
    const { page, problems } = await openPage(flow.verification_url_complete);
    await page.getByRole('button', { name: 'New here? Create an account' }).click();
    await page.getByLabel('Email').fill(`page-${Date.now()}@example.com`);
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    // A weak password is refused next to its field, and the field is marked invalid.
    await eventually(() => page.locator('#password-error').isVisible()).toBe(true);
    expect(await page.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');
    await page.getByLabel('Password').fill('a-much-better-one-42');
    await page.getByLabel('Your name (optional)').fill('Page Tester');
    await page.getByRole('button', { name: 'Create account' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approve this application?' }).isVisible()).toBe(true);
    expect(await page.locator('#request-platform').textContent()).toBe('Cursor');
    await page.getByRole('button', { name: 'Deny' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Denied' }).isVisible()).toBe(true);
    expect((await poll(flow.device_code)).code).toBe(4804);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('works with the keyboard alone: a wrong code shows an error, the right one is approved', async () => {
    const human = await signUpHuman(test);
    const flow = await startFlow('codex_cli');
    const { page, problems } = await openPage(flow.verification_url);
    await page.keyboard.press('Tab');
    expect(await focusedId(page)).toBe('email');
    await page.keyboard.type(human.email);
    await page.keyboard.press('Tab');
    expect(await focusedId(page)).toBe('password');
    await page.keyboard.type(human.password);
    await page.keyboard.press('Enter');
    await eventually(() => focusedId(page)).toBe('user-code');

    await page.keyboard.type('BBBB-BBBB');
    await page.keyboard.press('Enter');
    await eventually(() => page.locator('#user-code-error').textContent()).toContain('No request has this code');
    expect(await page.locator('#user-code-error').isVisible()).toBe(true);
    expect(await focusedId(page)).toBe('user-code');
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type(flow.user_code.toLowerCase());
    await page.keyboard.press('Enter');

    await eventually(() => focusedId(page)).toBe('request-title');
    expect(await page.locator('#request-platform').textContent()).toBe('Codex CLI');
    // The optional budget comes first (docs/decisions/money-and-escrow.md "Agent budgets"), then Approve.
    for (const [id, typed] of [
      ['budget-per-purchase', '2'],
      ['budget-daily', ''],
      ['budget-categories-toggle', ''],
    ] as const) {
      await page.keyboard.press('Tab');
      expect(await focusedId(page)).toBe(id);
      if (typed) await page.keyboard.type(typed);
    }
    await page.keyboard.press('Tab');
    expect(await focusedId(page)).toBe('approve');
    await page.keyboard.press('Enter');
    await eventually(() => focusedId(page)).toBe('outcome-title');
    expect(await page.locator('#outcome-title').textContent()).toBe('Approved');

    const collected = await poll(flow.device_code);
    expect(collected.code).toBe(0);
    expect((await whoAmI(collected.data.api_key!, human.userId)).data).toMatchObject({ caller_type: 'agent', agent_budget: { per_purchase_max: '2.00' } });
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('in the Chromium an npm package ships (a fresh machine without one installed)', () => {
  let bundled: Awaited<ReturnType<typeof launchChromium>>;
  beforeAll(async () => {
    bundled = await launchChromium('bundled');
  }, 60_000);
  afterAll(() => bundled?.close());

  it('signs in and approves; the client collects its key', async () => {
    expect(bundled.source).toBe('@sparticuz/chromium');
    const human = await signUpHuman(test);
    const flow = await startFlow('cursor');
    const { page, problems } = await openPage(flow.verification_url_complete, bundled);
    await page.getByLabel('Email').fill(human.email);
    await page.getByLabel('Password').fill(human.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approve this application?' }).isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Approve' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approved' }).isVisible()).toBe(true);
    expect(await poll(flow.device_code)).toMatchObject({ code: 0, data: { status: 'approved', user_id: human.userId } });
    expect(problems).toEqual([]);
    await page.close();
  });
});
