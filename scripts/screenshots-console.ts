import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import type { TestApp } from '../test/helpers/app.ts';
import { signUpHuman } from '../test/helpers/actors.ts';
import { chromiumToLaunch } from '../test/helpers/browser.ts';
import { credit } from '../test/helpers/market.ts';

/**
 * Screenshots of every page of the web console (issue 31), at the desktop and phone widths, into
 * docs/screenshots/console-<page>-<width>.png: a small market is made first (tasks in the hall,
 * skills, an application waiting, a delivered transaction, a wallet with history, keys), then each
 * page is opened as the person who would see it. The task hall is also taken in Chinese.
 */
type Viewport = { width: number; height: number };
type Person = Awaited<ReturnType<typeof signUpHuman>>;

async function market(test: TestApp) {
  const publisher = await signUpHuman(test, 'mei@example.com');
  const worker = await signUpHuman(test, 'li@example.com');
  const as = (who: Person) => ({ Authorization: `Bearer ${who.token}` });
  await credit(test, publisher.userId, '800.00', 'CNY');
  await credit(test, publisher.userId, '120.00', 'UT');
  const skill = (
    await test.http
      .post('/api/v1/skills/')
      .set(as(worker))
      .send({ name: 'English to Chinese translation', description: 'Manuals and documentation, 5,000 words a day.', category: 'translation', ut_price: '60' })
  ).body.data as { id: string };
  await test.http.post('/api/v1/skills/').set(as(worker)).send({
    name: 'Watercolour illustration',
    description: 'Children book illustrations in watercolour.',
    category: 'illustration',
    ut_price: '90',
    pricing_model: 'per_day',
  });
  const publish = async (title: string, description: string, category: string, bounty: string) =>
    (
      await test.http
        .post('/api/v1/tasks/')
        .set(as(publisher))
        .send({ title, description, mode: 'online', category, bounty_amount: bounty, delivery_hours: 48 })
    ).body.data as { id: string };
  const open = await publish('Translate a product manual', 'Translate a 20-page manual from English to Chinese. Deliver a Word file.', 'translation', '80');
  await publish('A logo for a bakery', 'A simple, warm logo for a neighbourhood bakery; three proposals.', 'design', '150');
  await publish('Proofread a thesis chapter', 'About 8,000 words of English; track changes.', 'academic', '45');
  const matched = await publish('Subtitles for a short film', 'Chinese subtitles for a 12-minute film.', 'translation', '120');
  await test.http
    .post(`/api/v1/tasks/${open.id}/applications`)
    .set(as(worker))
    .send({ skill_id: skill.id, proposed_price: '70', message: 'Native speaker, 8 years of manuals.' });
  const application = (await test.http.post(`/api/v1/tasks/${matched.id}/applications`).set(as(worker)).send({ skill_id: skill.id })).body.data as {
    id: string;
  };
  const accepted = (await test.http.post(`/api/v1/tasks/${matched.id}/applications/${application.id}/accept`).set(as(publisher)).send({})).body.data as {
    transaction: { id: string };
  };
  const transactionId = accepted.transaction.id;
  await test.http.post(`/api/v1/transactions/${transactionId}/accept`).set(as(worker));
  await test.http
    .post(`/api/v1/transactions/${transactionId}/deliver`)
    .set(as(worker))
    .send({ result_payload: { text: 'The subtitles, timed to the final cut.', link: 'https://files.example.com/film-zh.srt' } });
  const draft = (
    await test.http
      .post('/api/v1/tasks/')
      .set(as(publisher))
      .send({ title: 'Record a voice-over', description: 'Two minutes, calm voice.', mode: 'online', draft: true })
  ).body.data as { id: string };
  await test.http.post('/api/v1/auth/api-keys').set(as(publisher)).set('Origin', test.config.publicBaseUrl).send({ name: 'Shopping bot' });
  return { publisher, worker, openId: open.id, draftId: draft.id, transactionId };
}

async function signIn(page: Page, base: string, person: Person) {
  await page.goto(`${base}/#/sign-in`);
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password').fill(person.password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Task hall' }).waitFor();
}

export async function consoleScreenshots(test: TestApp, base: string, viewports: Record<string, Viewport>, directory: string) {
  const { publisher, worker, openId, draftId, transactionId } = await market(test);
  const { executablePath, args } = await chromiumToLaunch();
  const browser = await chromium.launch({ executablePath, args, headless: true });
  try {
    await everyPage(browser, base, viewports, directory, { publisher, worker, openId, draftId, transactionId });
  } finally {
    await browser.close();
  }
}

async function everyPage(
  browser: import('playwright-core').Browser,
  base: string,
  viewports: Record<string, Viewport>,
  directory: string,
  { publisher, worker, openId, draftId, transactionId }: Awaited<ReturnType<typeof market>>,
) {
  for (const [size, viewport] of Object.entries(viewports)) {
    const shot = async (page: Page, name: string) => {
      await page.locator('h1').first().waitFor();
      await page.screenshot({ path: path.join(directory, `console-${name}-${size}.png`), fullPage: true });
    };
    const guest = await (await browser.newContext({ viewport, locale: 'en-GB' })).newPage();
    await guest.goto(`${base}/`);
    await shot(guest, 'task-hall');
    await guest.goto(`${base}/#/skills`);
    await shot(guest, 'skill-hall');
    await guest.goto(`${base}/#/sign-in?mode=sign-up`);
    await shot(guest, 'sign-up');
    const chinese = await (await browser.newContext({ viewport, locale: 'zh-CN' })).newPage();
    await chinese.goto(`${base}/`);
    await chinese.getByRole('heading', { name: '任务大厅' }).waitFor();
    await shot(chinese, 'task-hall-zh');

    const page = await (await browser.newContext({ viewport, locale: 'en-GB' })).newPage();
    await signIn(page, base, publisher);
    const pages: [string, string][] = [
      ['hire', '/hire'],
      ['publish', '/tasks/new'],
      ['task-draft', `/tasks/${draftId}`],
      ['task-applications', `/tasks/${openId}`],
      ['transaction-delivered', `/transactions/${transactionId}`],
      ['wallet', '/wallet'],
      ['agents', '/agents'],
    ];
    for (const [name, hash] of pages) {
      await page.goto(`${base}/#${hash}`);
      await shot(page, name);
    }
    await page.goto(`${base}/#/tasks/new`);
    await page.getByLabel('Bounty (CNY)').fill('900');
    await shot(page, 'publish-short-balance');

    const work = await (await browser.newContext({ viewport, locale: 'en-GB' })).newPage();
    await signIn(work, base, worker);
    for (const [name, hash] of [
      ['work', '/work'],
      ['task-apply', `/tasks/${openId}`],
      ['skill-new', '/skills/new'],
    ] as const) {
      await work.goto(`${base}/#${hash}`);
      await shot(work, name);
    }
    await work.getByLabel('Draft it for me').check();
    await work.getByLabel('Describe the skill in a sentence or two').fill('I translate product manuals from English to Chinese within two days.');
    await work.getByRole('button', { name: 'Write the draft' }).click();
    await work.getByRole('heading', { name: 'Check the draft' }).waitFor();
    await shot(work, 'skill-ai-draft');
  }
}
