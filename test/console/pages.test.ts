import { pathToFileURL } from 'node:url';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { contentSecurityPolicy } from '../../web/serve.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { type ConsoleWorld, credit, eventually, openConsole, seriousViolations, signUpOnPage, startConsole } from './harness.ts';

/**
 * Every page of the console: no serious or critical axe-core violation (run in the page, with the
 * page's CSP as served), nothing wider than a 390 px phone, the CSP and framing headers on every
 * file, Chinese for a Chinese browser, one language file per language with the same keys, and a
 * sign-in and a move to another page with the keyboard alone.
 */
let world: ConsoleWorld;
beforeAll(async () => {
  world = await startConsole();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
const consoleDirectory = path.resolve('web/console');
const files = readdirSync(consoleDirectory, { recursive: true, encoding: 'utf8' }).filter((name) => /\.(js|css|html)$/.test(name));

/** A draft, an open task with an application, and an accepted one whose transaction is frozen. */
async function market() {
  const publisher = await signUpHuman(world.test);
  const worker = await signUpHuman(world.test);
  await credit(world, publisher.userId, '500.00');
  const as = (who: { token: string }) => ({ Authorization: `Bearer ${who.token}` });
  const skill = (
    await world.test.http.post('/api/v1/skills/').set(as(worker)).send({ name: 'Logo design', description: 'Logos', category: 'design', ut_price: '40' })
  ).body.data as { id: string };
  const publish = async (title: string, bounty: string) =>
    (
      await world.test.http
        .post('/api/v1/tasks/')
        .set(as(publisher))
        .send({ title, description: `${title}, in detail.`, mode: 'online', category: 'design', bounty_amount: bounty, delivery_hours: 24 })
    ).body.data as { id: string };
  const draft = (await world.test.http.post('/api/v1/tasks/').set(as(publisher)).send({ title: 'A draft', description: 'Later', mode: 'online', draft: true }))
    .body.data as { id: string };
  const open = await publish('A logo for a bakery', '50');
  const accepted = await publish('A logo for a café', '60');
  await world.test.http
    .post(`/api/v1/tasks/${open.id}/applications`)
    .set(as(worker))
    .send({ skill_id: skill.id, proposed_price: '45', message: 'I can do it today.' })
    .expect(201);
  const application = (await world.test.http.post(`/api/v1/tasks/${accepted.id}/applications`).set(as(worker)).send({ skill_id: skill.id })).body.data as {
    id: string;
  };
  const match = (await world.test.http.post(`/api/v1/tasks/${accepted.id}/applications/${application.id}/accept`).set(as(publisher)).send({})).body.data as {
    transaction: { id: string };
  };
  return { publisher, worker, draft, open, transactionId: match.transaction.id };
}

async function signIn(page: Page, person: { email: string; password: string }) {
  await page.goto(`${world.base}/#/sign-in`);
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Task hall' }).waitFor();
}

async function checkPage(page: Page, hash: string, heading: string | RegExp) {
  await page.goto(`${world.base}/#${hash}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  // A page is shown once its lists are loaded (the router renders it whole), so it is judged as seen.
  expect(await seriousViolations(page), hash).toEqual([]);
}

describe('every page of the console', () => {
  it('has no serious or critical accessibility violation, signed out and signed in, for both parties', async () => {
    const { publisher, worker, draft, open, transactionId } = await market();
    const context = await world.context();
    const { page, problems } = await openConsole(context, `${world.base}/`);
    await checkPage(page, '/', 'Task hall');
    await checkPage(page, '/skills', 'Skill hall');
    await checkPage(page, '/sign-in', 'Sign in');
    await signIn(page, publisher);
    const pages: [string, string | RegExp][] = [
      ['/', 'Task hall'],
      ['/hire', 'Hire'],
      ['/tasks/new', 'Publish a task'],
      [`/tasks/${draft.id}`, 'A draft'],
      [`/tasks/${open.id}`, 'A logo for a bakery'],
      [`/transactions/${transactionId}`, 'The work you pay for'],
      ['/work', 'Work'],
      ['/skills/new', 'Create a skill'],
      ['/wallet', 'Wallet'],
      ['/agents', 'My agents'],
      ['/nowhere', 'Page not found'],
    ];
    for (const [hash, heading] of pages) await checkPage(page, hash, heading);
    for (const way of ['From my CV', 'Draft it for me']) {
      await page.goto(`${world.base}/#/skills/new`);
      await page.getByLabel(way).check();
      expect(await seriousViolations(page), way).toEqual([]);
    }
    const workerPage = (await openConsole(await world.context(), `${world.base}/`)).page;
    await signIn(workerPage, worker);
    await checkPage(workerPage, `/tasks/${open.id}`, 'A logo for a bakery');
    await checkPage(workerPage, `/transactions/${transactionId}`, 'The work you do');
    expect(problems).toEqual([]);
  }, 180_000);

  it('fits a 390 px phone: no page is wider than the screen', async () => {
    const { publisher, open, transactionId } = await market();
    const context = await world.context();
    const { page } = await openConsole(context, `${world.base}/`);
    await page.setViewportSize({ width: 390, height: 844 });
    await signIn(page, publisher);
    for (const hash of [
      '/',
      '/skills',
      '/hire',
      '/tasks/new',
      `/tasks/${open.id}`,
      `/transactions/${transactionId}`,
      '/work',
      '/skills/new',
      '/wallet',
      '/agents',
    ]) {
      await page.goto(`${world.base}/#${hash}`);
      await page.locator('h1').waitFor();
      expect(await page.evaluate<number>('document.documentElement.scrollWidth'), hash).toBeLessThanOrEqual(390);
    }
  }, 120_000);

  it('signs in and moves between pages with the keyboard alone', async () => {
    const person = await signUpHuman(world.test);
    const { page } = await openConsole(await world.context(), `${world.base}/#/sign-in`);
    const focused = () => page.evaluate<string>("document.activeElement ? (document.activeElement.id || document.activeElement.textContent || '').trim() : ''");
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('skip');
    await page.keyboard.press('Enter');
    expect(await focused()).toBe('view');
    await page.keyboard.press('Tab');
    await page.keyboard.type(person.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(person.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Task hall' }).waitFor();
    // The new page's title has the focus, so a screen reader starts there.
    await eventually(() => focused()).toContain('Task hall');
    const wallet = page.getByRole('link', { name: 'Wallet' });
    for (let presses = 0; presses < 20 && !(await wallet.evaluate((element) => element === element.ownerDocument.activeElement)); presses += 1)
      await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Enter');
    await eventually(() => focused()).toBe('Wallet');
  });

  it('speaks Chinese to a Chinese browser, and shows what people typed as they typed it', async () => {
    const person = await signUpHuman(world.test);
    const title = '<b>设计</b> a logo & "menu"';
    await credit(world, person.userId, '10.00');
    await world.test.http
      .post('/api/v1/tasks/')
      .set('Authorization', `Bearer ${person.token}`)
      .send({ title, description: '<script>alert(1)</script>', mode: 'online' })
      .expect(201);
    const page = await (await world.context('zh-CN')).newPage();
    await page.goto(`${world.base}/`);
    await page.getByRole('heading', { level: 1, name: '任务大厅' }).waitFor();
    expect(await page.evaluate<string>('document.documentElement.lang')).toBe('zh-CN');
    expect(await page.getByRole('link', { name: title }).isVisible()).toBe(true);
    expect(await page.getByText('<script>alert(1)</script>').isVisible()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'English' }).click();
    await page.getByRole('heading', { level: 1, name: 'Task hall' }).waitFor();
  });

  it('explains an API refusal in words, with what to do, never as raw JSON', async () => {
    const context = await world.context();
    const { page } = await openConsole(context, `${world.base}/#/sign-in`);
    await page.getByLabel('Email').fill(`nobody-${unique()}@example.com`);
    await page.getByLabel('Password').fill('not-the-password-1');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const alert = page.getByRole('alert');
    await eventually(() => alert.textContent()).toContain('Wrong email or password.');
    expect(await alert.textContent()).toContain('Check both and try again');
    expect(await alert.textContent()).not.toContain('{');
    await signUpOnPage(page, `refused-${unique()}@example.com`);
    await page.goto(`${world.base}/#/tasks/00000000-0000-4000-8000-000000000000`);
    await eventually(() => page.getByRole('alert').textContent()).toContain('This task was not found');
  });
});

describe('the console as served', () => {
  it('sends the strict CSP, no framing and no sniffing on the page and every file, compressed, revalidated by ETag', async () => {
    for (const name of ['index.html', ...files]) {
      const url = name === 'index.html' ? '/' : `/console/${name.split(path.sep).join('/')}`;
      const response = await world.test.http.get(url).set('Accept-Encoding', 'br');
      expect(response.status, url).toBe(200);
      expect(response.headers['content-security-policy'], url).toBe(contentSecurityPolicy);
      expect(response.headers['x-frame-options']).toBe('DENY');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['content-encoding']).toBe('br');
      const again = await world.test.http.get(url).set('If-None-Match', response.headers.etag!);
      expect(again.status).toBe(304);
    }
    expect(contentSecurityPolicy).toContain("script-src 'self'");
    expect(contentSecurityPolicy).toContain("frame-ancestors 'none'");
    const missing = await world.test.http.get('/console/nothing.js');
    expect(missing.body).toMatchObject({ code: 4040 });
  });

  it('has no inline script or style, and builds no HTML from text', () => {
    const page = readFileSync(path.join(consoleDirectory, 'index.html'), 'utf8');
    for (const tag of page.match(/<script[^>]*>/g) ?? []) expect(tag).toMatch(/ src="\/console\//);
    expect(page).not.toMatch(/<style|style=/);
    for (const name of files.filter((file) => file.endsWith('.js'))) {
      const text = readFileSync(path.join(consoleDirectory, name), 'utf8');
      expect(text, name).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|\.style\.|setAttribute\('style'/);
      expect(text, name).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    }
  });

  it('has one language file per language, with the same keys, covering every word the pages ask for', async () => {
    // Loaded by address: the language files are the browser's plain modules, without declarations for TypeScript.
    const words = async (file: string) =>
      ((await import(pathToFileURL(path.join(consoleDirectory, 'i18n', file)).href)) as { default: Record<string, string> }).default;
    const [english, chinese] = await Promise.all([words('en.js'), words('zh.js')]);
    expect(Object.keys(chinese).sort()).toEqual(Object.keys(english).sort());
    for (const name of files.filter((file) => file.endsWith('.js') && !file.startsWith('i18n'))) {
      const text = readFileSync(path.join(consoleDirectory, name), 'utf8');
      for (const [, key] of text.matchAll(/\bt\('([a-z0-9.-]+)'/g)) expect(english, `${name} asks for ${key}`).toHaveProperty([key!]);
    }
  });
});
