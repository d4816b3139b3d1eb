import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { apiGet, cashOf, type ConsolePage, type ConsoleWorld, credit, eventually, openConsole, sessionOf, signUpOnPage, startConsole } from './harness.ts';

/**
 * The console's journeys end to end, as two people in two browser contexts against one server: a
 * publisher and a worker, from signing up to a rated, settled task. After each step the money is
 * read from the API and compared with what the page said. The platform fee is 5%, so the worker's
 * pay and the publisher's cost differ as they would in production.
 */
let world: ConsoleWorld;
let publisherContext: BrowserContext;
let workerContext: BrowserContext;
beforeAll(async () => {
  world = await startConsole({ PLATFORM_FEE_BPS: '500' });
  publisherContext = await world.context();
  workerContext = await world.context();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);

describe('hiring and working through the console, to a rated, settled task', () => {
  let publisher: ConsolePage;
  let worker: ConsolePage;
  let publisherSession: { token: string; user_id: string };
  let workerSession: { token: string; user_id: string };
  let taskId: string;
  const title = `Translate a product manual ${unique()}`;

  it('1: anyone sees the task hall; both people sign up from it', async () => {
    publisher = await openConsole(publisherContext, `${world.base}/`);
    expect(await publisher.page.getByRole('heading', { level: 1 }).textContent()).toBe('Task hall');
    expect(await publisher.page.getByText('You are browsing as a guest').isVisible()).toBe(true);
    publisherSession = await signUpOnPage(publisher.page, `publisher-${unique()}@example.com`);
    await eventually(() => publisher.page.getByRole('link', { name: 'Hire' }).isVisible()).toBe(true);
    worker = await openConsole(workerContext, `${world.base}/#/skills`);
    workerSession = await signUpOnPage(worker.page, `worker-${unique()}@example.com`);
    expect((await cashOf(world, publisherSession.token)).available).toBe('0.00');
  });

  it('2: a bounty above the balance is kept as a draft and the page says why; publishing it then holds the bounty', async () => {
    await credit(world, publisherSession.user_id, '100.00');
    const { page } = publisher;
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByRole('heading', { name: 'Publish a task' }).waitFor();
    await eventually(() => page.locator('#hold-preview').textContent()).toContain('¥100.00 available, ¥0.00 held');
    await page.getByLabel('Title').fill(title);
    await page.getByLabel('Description').fill('Translate a 20-page manual from English to Chinese.\nDeliver a Word file.');
    await page.getByLabel('Category').selectOption('translation');
    await page.getByLabel('Delivery time (hours)').fill('48');
    await page.getByLabel('Bounty (CNY)').fill('150');
    expect(await page.locator('#hold-preview').textContent()).toContain('¥50.00 more than you have available');
    await page.getByRole('button', { name: 'Publish the task' }).click();
    await eventually(() => page.getByText('Kept as a draft: your available balance is ¥100.00 and the bounty needs ¥150.00').isVisible()).toBe(true);
    taskId = /#\/tasks\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    expect((await apiGet(world, publisherSession.token, `/api/v1/tasks/${taskId}`)).data).toMatchObject({ status: 'draft', bounty_held: '0.00' });
    expect(await cashOf(world, publisherSession.token)).toMatchObject({ available: '100.00', frozen: '0.00' });

    await page.getByLabel('Bounty (CNY)').fill('80');
    expect(await page.getByText('Publishing holds ¥80.00. After: ¥20.00 available, ¥80.00 held.').isVisible()).toBe(true);
    await page.getByRole('button', { name: 'Publish and hold the bounty' }).click();
    await eventually(() => page.getByText('Published. ¥80.00 is held for this task.').isVisible()).toBe(true);
    await eventually(() => page.getByText('Your wallet now: ¥20.00 available, ¥80.00 held.').isVisible()).toBe(true);
    expect((await apiGet(world, publisherSession.token, `/api/v1/tasks/${taskId}`)).data).toMatchObject({ status: 'open', bounty_held: '80.00' });
    expect(await cashOf(world, publisherSession.token)).toMatchObject({ available: '20.00', frozen: '80.00' });
  });

  it('3: the worker creates a skill by hand, finds the task by searching the hall, and applies', async () => {
    const { page } = worker;
    await page.goto(`${world.base}/#/skills/new`);
    await page.getByRole('heading', { name: 'Create a skill' }).waitFor();
    await page.getByLabel('Name').fill('English to Chinese translation');
    await page.getByLabel('Description').fill('Manuals and documentation, 5,000 words a day.');
    await page.getByLabel('Category').selectOption('translation');
    await page.getByLabel('Price (CNY)').fill('60');
    await page.getByRole('button', { name: 'Create the skill' }).click();
    await page.getByRole('heading', { name: 'Work' }).waitFor();
    expect(await page.getByText('English to Chinese translation', { exact: true }).isVisible()).toBe(true);

    await page.getByRole('link', { name: 'Task hall' }).click();
    // Filters the API refuses: the error, and no list left standing for them.
    await page.getByLabel('Lowest bounty (CNY)').fill('100');
    await page.getByLabel('Highest bounty (CNY)').fill('10');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(() => page.locator('[aria-invalid="true"]').count()).toBeGreaterThan(0);
    expect(await page.locator('ul.cards > li').count()).toBe(0);
    await page.getByLabel('Lowest bounty (CNY)').fill('');
    await page.getByLabel('Highest bounty (CNY)').fill('');
    await page.getByLabel('Search', { exact: true }).fill('product manual');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('link', { name: title }).click();
    await page.getByRole('heading', { name: title }).waitFor();
    await page.getByLabel('Your price (CNY, optional)').fill('70');
    await page.getByLabel('Message to the publisher (optional)').fill('Native speaker, done this for 8 years.');
    await page.getByRole('button', { name: 'Send the application' }).click();
    await eventually(() => page.getByText('Waiting for an answer').isVisible()).toBe(true);
  });

  it('4: the publisher sees the application arrive without a reload, with the price and ceiling stated; accepting moves the money as said', async () => {
    const { page } = publisher;
    // The page opened before the application existed: the task stream brings it in.
    const accept = page.getByRole('button', { name: 'Accept English to Chinese translation for ¥70.00' });
    await eventually(() => accept.isVisible()).toBe(true);
    const terms = await page.locator('.terms').first().textContent();
    expect(terms).toContain('Price ¥70.00. Ceiling sent with the accept: ¥70.00');
    expect(terms).toContain('The task holds ¥80.00; ¥10.00 goes back to your available balance.');
    expect(await page.getByText('Native speaker, done this for 8 years.').isVisible()).toBe(true);
    await accept.click();
    await page.getByRole('heading', { name: 'The work you pay for' }).waitFor();
    const transactionId = /#\/transactions\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    expect(await cashOf(world, publisherSession.token)).toMatchObject({ available: '30.00', frozen: '70.00' });
    expect((await apiGet(world, publisherSession.token, `/api/v1/transactions/${transactionId}`)).data).toMatchObject({
      status: 'frozen',
      price_ut: '70.00',
      currency: 'CNY',
    });
    expect((await apiGet(world, publisherSession.token, `/api/v1/tasks/${taskId}`)).data).toMatchObject({ status: 'matched', bounty_held: '0.00' });
  });

  it('5: the worker, told live, accepts the work and delivers; the publisher sees the delivery arrive and confirms; the money settles', async () => {
    const { page } = worker;
    const start = page.getByRole('link', { name: 'You were accepted: start the work' });
    await eventually(() => start.isVisible()).toBe(true);
    await start.click();
    await page.getByRole('heading', { name: 'The work you do' }).waitFor();
    // With the keyboard: the button goes away with the answer, and the keyboard goes on from the next step, not the top of the page.
    await page.getByRole('button', { name: 'Accept the work' }).focus();
    await page.keyboard.press('Enter');
    await eventually(() => page.evaluate<string | undefined>('document.activeElement && document.activeElement.id')).toBe('next-step');
    await page.getByLabel('What you deliver').fill('The manual in Chinese: https://files.example.com/manual-zh.docx');
    await page.getByRole('button', { name: 'Deliver', exact: true }).click();
    await eventually(() => page.getByText('Delivered. Waiting for the buyer to confirm').isVisible()).toBe(true);

    const buyer = publisher.page;
    const confirm = buyer.getByRole('button', { name: 'Confirm and pay ¥70.00' });
    await eventually(() => confirm.isVisible()).toBe(true);
    expect(await buyer.getByText('The manual in Chinese: https://files.example.com/manual-zh.docx').isVisible()).toBe(true);
    await confirm.click();
    await eventually(() => buyer.getByText('Settled: ¥70.00 was paid to the worker.').isVisible()).toBe(true);
    // The worker's page follows without a reload.
    await eventually(() => page.getByText('Settled: ¥70.00 was paid to your wallet').isVisible()).toBe(true);
    expect(await cashOf(world, publisherSession.token)).toMatchObject({ available: '30.00', frozen: '0.00', total: '30.00' });
    // 5% of 70.00 is the platform's fee.
    expect(await cashOf(world, workerSession.token)).toMatchObject({ available: '66.50', frozen: '0.00' });
  });

  it('6: the publisher rates the work; the skill shows it', async () => {
    const { page } = publisher;
    await page.getByRole('link', { name: 'Rate the work' }).click();
    await page.getByRole('heading', { name: title }).waitFor();
    await page.getByLabel('5 of 5').check();
    await page.getByLabel('Comment (optional)').fill('Fast and careful.');
    await page.getByRole('button', { name: 'Send the rating' }).click();
    await eventually(() => page.getByText(/You rated 5 of 5/).isVisible()).toBe(true);
    const skill = (await apiGet(world, workerSession.token, '/api/v1/skills/')).data.items![0]!;
    const ratings = await apiGet(world, workerSession.token, `/api/v1/skills/${String(skill.id)}/ratings`);
    expect(ratings.data.items![0]).toMatchObject({ score: 5, comment: 'Fast and careful.', task_id: taskId });
    expect(publisher.problems).toEqual([]);
    expect(worker.problems).toEqual([]);
  });

  it('shows the same person as signed in on the device page (one session)', async () => {
    const { page } = publisher;
    await page.goto(`${world.base}/device`);
    await eventually(() => page.locator('#who').textContent()).toBe((await sessionOf(page)).email);
  });
});
