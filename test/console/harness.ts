import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { startTestApp, testAdminToken, type TestApp } from '../helpers/app.ts';
import { chromiumToLaunch } from '../helpers/browser.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * The web console in a real headless Chromium against one server: one browser, a context per
 * person (their own tab storage, so their own session), pages that fail the test on any script
 * error or Content-Security-Policy violation, and the API beside the page to check the money.
 */
export interface ConsoleWorld {
  test: TestApp;
  server: Server;
  base: string;
  browser: Browser;
  /** A person's browser context (closed with the world: the packaged Chromium runs in one process, where closing one early may end them all). */
  context(locale?: string): Promise<BrowserContext>;
  close(): Promise<void>;
}

export async function startConsole(environment: Record<string, string> = {}): Promise<ConsoleWorld> {
  const held = await holdPort();
  const { server, base } = held;
  const test = await startTestApp({ PUBLIC_BASE_URL: base, ...environment }).catch(async (error: unknown) => {
    await held.close();
    throw error;
  });
  held.serve(test.app);
  // A browser that fails to start leaves nothing running behind it: the failure is then the one reported.
  const browser = await chromiumToLaunch()
    .then(({ executablePath, args }) => chromium.launch({ executablePath, args, headless: true }))
    .catch(async (error: unknown) => {
      await held.close();
      await test.close();
      throw error;
    });
  const contexts: BrowserContext[] = [];
  return {
    test,
    server,
    base,
    browser,
    async context(locale = 'en-GB') {
      const context = await browser.newContext({ locale });
      contexts.push(context);
      return context;
    },
    async close() {
      // The packaged Chromium runs in one process: a context may already be gone with its pages.
      for (const context of contexts) await context.close().catch(() => undefined);
      await browser.close();
      await held.close();
      await test.close();
    },
  };
}

export interface ConsolePage {
  page: Page;
  problems: string[];
}

/** A page of the console; `problems` collects script errors and CSP violations (4xx answers are expected). */
export async function openConsole(context: BrowserContext, url: string): Promise<ConsolePage> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text()))
      problems.push(message.text());
  });
  page.on('dialog', (dialog) => void dialog.accept());
  const response = await page.goto(url);
  expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
  await page.locator('h1').first().waitFor();
  return { page, problems };
}

/** Waits for what the page shows after a call; password hashing on a busy machine can take seconds. */
export const eventually = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });

/** Signs a new person up through the console's own form; answers their session as the page keeps it. */
export async function signUpOnPage(page: Page, email: string, password = 'a-good-password-42') {
  await page.goto(`${new URL(page.url()).origin}/#/sign-in?mode=sign-up`);
  await page.getByRole('heading', { name: 'Create an account' }).waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await eventually(() => page.evaluate<string | null>("sessionStorage.getItem('agent-marketplace.device-page')")).not.toBeNull();
  return sessionOf(page);
}

export async function sessionOf(page: Page): Promise<{ token: string; user_id: string; email: string }> {
  return JSON.parse((await page.evaluate<string | null>("sessionStorage.getItem('agent-marketplace.device-page')"))!) as {
    token: string;
    user_id: string;
    email: string;
  };
}

/** The money as the API tells it, for the test to compare with what the page said. */
export async function cashOf(world: ConsoleWorld, token: string) {
  const response = await world.test.http.get('/api/v1/wallet/').set('Authorization', `Bearer ${token}`).expect(200);
  return response.body.data.cash as { available: string; frozen: string; total: string };
}

export async function credit(world: ConsoleWorld, userId: string, amount: string) {
  await world.test.http.post('/api/v1/admin/wallet/credit').set('X-Admin-Token', testAdminToken).send({ user_id: userId, currency: 'CNY', amount }).expect(200);
}

export async function apiGet(world: ConsoleWorld, token: string, path: string) {
  const response = await world.test.http.get(path).set('Authorization', `Bearer ${token}`);
  return response.body as { code: number; data: Record<string, unknown> & { items?: Record<string, unknown>[] } };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core run in the page (evaluated through the debugging protocol, so the page's CSP stays as served). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const result = await page.evaluate<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }>(
    "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })",
  );
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}
