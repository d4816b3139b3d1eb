import path from 'node:path';
import { chromium } from 'playwright-core';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp } from '../helpers/app.ts';
import { chromiumToLaunch } from '../helpers/browser.ts';
import { createCapability, credit } from '../helpers/market.ts';
import { holdPort } from '../helpers/server.ts';

/**
 * Screenshots of My agents with budgets (issue 31), beside the ones scripts/screenshots.ts takes:
 * a key with a budget partly spent, its transactions open, and the budget form of another key
 * open, at the desktop and phone widths, into docs/screenshots/console-agent-budget-<size>.png and
 * console-agent-budget-form-<size>.png. Run with `npx tsx test/console/screenshots-agents.ts`.
 */
const directory = path.resolve('docs/screenshots');
const viewports = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

async function main() {
  const held = await holdPort();
  const port = held.port;
  const base = `http://127.0.0.1:${port}`;
  const test = await startTestApp({ PUBLIC_BASE_URL: base });
  const server = held.server;
  held.serve(test.app);
  const person = await signUpHuman(test, 'mei@example.com');
  const as = { Authorization: `Bearer ${person.token}`, Origin: base };
  await credit(test, person.userId, '120.00');
  const make = async (name: string) =>
    (await test.http.post('/api/v1/auth/api-keys').set(as).send({ name })).body.data as { api_key: string; key: { id: string } };
  const shopping = await make('Shopping bot');
  await make('Research helper');
  await test.http
    .put(`/api/v1/auth/api-keys/${shopping.key.id}/budget`)
    .set(as)
    .send({ per_purchase_max: '10', daily_max: '25', categories: ['translation', 'data'] });
  const offer = await createCapability(test, await createAgent(test), { category: 'translation', price_ut: '8.50' });
  const agent = { 'X-Api-Key': shopping.api_key, 'X-Platform-User-Id': person.userId };
  const bought = await test.http.post('/api/v1/transactions').set(agent).set('Idempotency-Key', 'shot-1').send({ capability_id: offer.id });
  await test.http
    .post(`/api/v1/transactions/${bought.body.data.id as string}/freeze`)
    .set(agent)
    .set('Idempotency-Key', 'shot-2');

  const { executablePath, args } = await chromiumToLaunch();
  const browser = await chromium.launch({ executablePath, args, headless: true });
  try {
    for (const [size, viewport] of Object.entries(viewports)) {
      const page = await (await browser.newContext({ viewport, locale: 'en-GB' })).newPage();
      await page.goto(`${base}/#/sign-in`);
      await page.getByLabel('Email').fill(person.email);
      await page.getByLabel('Password').fill(person.password);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Task hall' }).waitFor();
      await page.goto(`${base}/#/agents`);
      await page.getByRole('heading', { name: 'My agents' }).waitFor();
      await page.getByText('Transactions through Shopping bot').click();
      await page.locator('.key-transactions .row').first().waitFor();
      await page.screenshot({ path: path.join(directory, `console-agent-budget-${size}.png`), fullPage: true });
      await page.reload();
      const card = page.locator('.card').filter({ hasText: 'Research helper' });
      await card.getByText('Set a budget for Research helper').click();
      await card.getByLabel('At most per purchase (UT)').fill('1.234');
      await card.getByLabel('At most per day (UT, the day ends at midnight UTC)').fill('30');
      await card.getByRole('button', { name: 'Save the budget of Research helper' }).click();
      await card.locator('[aria-invalid="true"]').first().waitFor();
      await page.getByText('Set a budget for Research helper').scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(directory, `console-agent-budget-form-${size}.png`), fullPage: true });
    }
  } finally {
    await browser.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await test.close();
  }
  console.log(`screenshots written to ${directory}`);
}

await main();
