import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { transactionActions, transactionStatuses, terminalStatuses } from '../../src/domain/escrow.ts';
import { applicationStatuses, taskStatuses } from '../../src/domain/tasks.ts';
import { historyTypes } from '../../src/schemas/wallet.ts';
import { signUpHuman } from '../helpers/actors.ts';
import { testAdminToken } from '../helpers/app.ts';
import { cashOf, type ConsoleWorld, credit, eventually, openConsole, seriousViolations, signUpOnPage, startConsole } from './harness.ts';

/**
 * How a deal ends, as the people in it read it (an outside walk-through found these): a refund
 * decided by the operator says "Refunded" and where the money went, in English and Chinese; a
 * cancelled deal says the money came back; the task of a deal that ended no longer says "Matched"
 * and "Accepted"; the wallet's history reads as moves of the person's money in the page's words,
 * one row a move, follows a payment made in another tab, and its statistics say what they count.
 */
let world: ConsoleWorld;
beforeAll(async () => {
  world = await startConsole();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
const consoleDirectory = path.resolve('web/console');
const words = async (file: string) =>
  ((await import(pathToFileURL(path.join(consoleDirectory, 'i18n', file)).href)) as { default: Record<string, string> }).default;

type Person = { token: string; user_id: string };
const as = (person: Person) => ({ Authorization: `Bearer ${person.token}` });

/** A task of the publisher's with the worker's application accepted: its transaction holds the price in escrow. */
async function deal(publisher: Person, worker: Person, title: string, bounty: string) {
  const task = (
    await world.test.http
      .post('/api/v1/tasks/')
      .set(as(publisher))
      .send({ title, description: `${title}, in detail.`, mode: 'online', category: 'design', bounty_amount: bounty, delivery_hours: 24 })
      .expect(201)
  ).body.data as { id: string };
  const skill = (
    await world.test.http
      .post('/api/v1/skills/')
      .set(as(worker))
      .send({ name: `Design ${unique()}`, description: 'Logos', category: 'design' })
      .expect(201)
  ).body.data as { id: string };
  const application = (await world.test.http.post(`/api/v1/tasks/${task.id}/applications`).set(as(worker)).send({ skill_id: skill.id }).expect(201)).body
    .data as { id: string };
  return { task, skill, application };
}

async function accept(publisher: Person, taskId: string, applicationId: string) {
  return (await world.test.http.post(`/api/v1/tasks/${taskId}/applications/${applicationId}/accept`).set(as(publisher)).send({}).expect(200)).body.data
    .transaction as { id: string };
}

const viewText = (page: Page) => page.locator('#view').innerText();

describe('the words for everything a deal can say', () => {
  it('has English and Chinese for every transaction status and move the API sends, every task and application status, and every kind of wallet entry', async () => {
    const [english, chinese] = await Promise.all([words('en.js'), words('zh.js')]);
    const wanted = [
      ...transactionStatuses.map((status) => `status.transaction.${status}`),
      // The history of a transaction names each event by its move (the event's `action`).
      // (the moves of the state machine, and `create`, the event of a new transaction: src/engine/money/transitions.ts).
      ...[...transactionActions, 'create'].map((action) => `event.transaction.${action}`),
      ...taskStatuses.map((status) => `status.task.${status}`),
      ...applicationStatuses.map((status) => `status.application.${status}`),
      ...historyTypes.map((type) => `history.${type}`),
      ...historyTypes.map((type) => `history.about.${type === 'freeze' ? 'task-hold' : type === 'unfreeze' ? 'task-release' : type}`),
      // A deal that ended says where the money went, to both parties.
      ...[...terminalStatuses].filter((status) => status !== 'settled').flatMap((status) => [`transaction.buyer.${status}`, `transaction.seller.${status}`]),
      ...[...terminalStatuses].filter((status) => status !== 'settled').map((status) => `task.ended.${status}`),
    ];
    for (const key of wanted) {
      expect(english, `en.js lacks ${key}`).toHaveProperty([key]);
      expect(chinese, `zh.js lacks ${key}`).toHaveProperty([key]);
      expect(chinese[key], `zh.js ${key} is English`).not.toBe(english[key]);
    }
  });
});

describe('a deal that ends, and the wallet that follows it', () => {
  it('1: a refund decided by the operator says Refunded and where the money went, live, in English and Chinese; the task says the deal ended', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const publisher = await signUpOnPage(page, `refund-${unique()}@example.com`);
    await credit(world, publisher.user_id, '100.00');
    const workerAccount = await signUpHuman(world.test);
    const worker = { token: workerAccount.token, user_id: workerAccount.userId };
    const { task, application } = await deal(publisher, worker, 'A logo for a tea shop', '40.00');
    const transaction = await accept(publisher, task.id, application.id);
    await world.test.http.post(`/api/v1/transactions/${transaction.id}/accept`).set(as(worker)).send({}).expect(200);
    await world.test.http
      .post(`/api/v1/transactions/${transaction.id}/deliver`)
      .set(as(worker))
      .send({ result_payload: { text: 'A logo' } })
      .expect(200);

    await page.goto(`${world.base}/#/transactions/${transaction.id}`);
    await page.getByRole('heading', { name: 'The work you pay for' }).waitFor();
    await page.getByLabel('Why (optional)').fill('Not the colours we agreed.');
    await page.getByRole('button', { name: 'Open a dispute' }).click();
    await eventually(() => page.getByText('Disputed: the money stays held').isVisible()).toBe(true);
    // The operator decides for the buyer while the page is open: the page follows without a reload.
    await world.test.http
      .post(`/api/v1/admin/transactions/${transaction.id}/resolve`)
      .set('X-Admin-Token', testAdminToken)
      .send({ outcome: 'refund' })
      .expect(200);
    await eventually(() => page.locator('dl.details .badge').first().textContent()).toBe('Refunded');
    await eventually(() => page.getByText('Refunded: ¥40.00 returned to your wallet.').isVisible()).toBe(true);
    expect(await page.getByRole('heading', { name: 'How it ended' }).isVisible()).toBe(true);
    await eventually(() => page.locator('ol.history').textContent()).toContain('The operator refunded the buyer');
    expect(await page.locator('ol.history').textContent()).toContain('Refunded');
    // No status or move shown as the API's code (refunded, resolve_refund, create).
    for (const badge of await page.locator('.badge').allTextContents()) expect(transactionStatuses).not.toContain(badge);
    const moves = await page.locator('ol.history').innerText();
    expect(moves).not.toMatch(/· [a-z]|\b[a-z]+_[a-z_]+\b| create ·/);
    expect(await cashOf(world, publisher.token)).toMatchObject({ available: '100.00', frozen: '0.00' });

    // In Chinese, read again from the start of the stream: every status and move in words.
    await page.getByRole('button', { name: '中文' }).click();
    await page.getByRole('heading', { level: 1, name: '你付款的工作' }).waitFor();
    await page.reload();
    await page.locator('dl.details .badge').first().waitFor();
    expect(await page.locator('dl.details .badge').first().textContent()).toBe('已退款');
    expect(await page.getByText('已退款：¥40.00 已退回你的钱包。').isVisible()).toBe(true);
    await eventually(() => page.locator('ol.history').textContent()).toContain('运营方已向买方退款');
    const history = await page.locator('ol.history').innerText();
    expect(history).not.toMatch(/[a-z_]{4,}/);

    // The task: not "Matched" with an "Accepted" application, but a deal that ended, in both languages.
    await page.goto(`${world.base}/#/tasks/${task.id}`);
    await page.getByRole('heading', { level: 1, name: 'A logo for a tea shop' }).waitFor();
    expect(await page.locator('#details .badge').textContent()).toBe('交易已结束');
    expect(await page.getByText('运营方裁决争议支持你：¥40.00 已退回你的可用余额。').isVisible()).toBe(true);
    expect(await viewText(page)).not.toContain('已匹配');
    await page.getByRole('button', { name: 'English' }).click();
    await page.getByRole('heading', { level: 1, name: 'A logo for a tea shop' }).waitFor();
    await eventually(() => page.locator('#details .badge').textContent()).toBe('Deal ended');
    expect(await page.getByText('Accepted; the deal ended').isVisible()).toBe(true);
    expect(await page.getByText('The operator decided the dispute for you: ¥40.00 came back to your available balance.').isVisible()).toBe(true);
    expect(await viewText(page)).not.toContain('Matched');
    expect(await seriousViolations(page)).toEqual([]);

    // The worker's side of the same task.
    const workerPage = (await openConsole(await world.context(), `${world.base}/#/sign-in`)).page;
    await workerPage.getByLabel('Email').fill(workerAccount.email);
    await workerPage.getByLabel('Password').fill(workerAccount.password);
    await workerPage.getByRole('button', { name: 'Sign in', exact: true }).click();
    await workerPage.getByRole('heading', { name: 'Task hall' }).waitFor();
    await workerPage.goto(`${world.base}/#/tasks/${task.id}`);
    await workerPage.getByRole('heading', { level: 1, name: 'A logo for a tea shop' }).waitFor();
    expect(await workerPage.getByText('Accepted; the deal ended').isVisible()).toBe(true);
    expect(await workerPage.getByText('The operator decided the dispute for the publisher and refunded them').isVisible()).toBe(true);
    expect(await workerPage.getByRole('link', { name: 'You were accepted: start the work' }).count()).toBe(0);
    await workerPage.goto(`${world.base}/#/transactions/${transaction.id}`);
    await eventually(() => workerPage.getByText('Refunded: the operator decided the dispute for the buyer and ¥40.00 went back to them.').isVisible()).toBe(
      true,
    );
    await workerPage.close();

    // The wallet: each move once, in words, none of the server's notes, nothing red that was only held.
    await page.goto(`${world.base}/#/wallet`);
    await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    const rows = page.locator('.table-scroll tbody tr');
    // Added, held for the task, released from the task at the accept, into escrow, refunded.
    expect(await rows.count()).toBe(5);
    const table = await page.locator('table').first().innerText();
    for (const said of [
      'Added by the operator',
      'Bounty held for your task',
      'Bounty of your task released',
      'Paid into escrow for a deal',
      'Refunded by the operator after a dispute',
    ])
      expect(table).toContain(said);
    expect(table).not.toMatch(/bounty of task|Funds|released \(|[0-9a-f]{8}-[0-9a-f]{4}/);
    expect(await page.locator('td.negative').count()).toBe(0);
    expect(await rows.nth(0).innerText()).toContain('¥100.00 available');
    await page.getByRole('button', { name: '中文' }).click();
    await page.getByRole('heading', { level: 1, name: '钱包' }).waitFor();
    const chineseTable = await page.locator('table').first().innerText();
    expect(chineseTable).toContain('争议后由运营方退款');
    expect(chineseTable).toContain('为你的任务冻结赏金');
    expect(chineseTable).not.toMatch(/[A-Za-z]{4,}/);
    expect(chineseTable).not.toMatch(/\d （/);
    await page.getByRole('button', { name: 'English' }).click();
    await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);

  it('1: cancelling says where the money went; a wallet open in a second tab follows a payment made in the first; its statistics say what they count', async () => {
    const context = await world.context();
    const { page, problems } = await openConsole(context, `${world.base}/`);
    const password = 'a-good-password-42';
    const email = `tabs-${unique()}@example.com`;
    const publisher = await signUpOnPage(page, email, password);
    await credit(world, publisher.user_id, '200.00');
    const workerAccount = await signUpHuman(world.test);
    const worker = { token: workerAccount.token, user_id: workerAccount.userId };
    const first = await deal(publisher, worker, 'A menu for a café', '30.00');
    const second = await deal(publisher, worker, 'A sign for a café', '50.00');

    // Cancelled from the page: the next step says where the money went.
    const transaction = await accept(publisher, first.task.id, first.application.id);
    await page.goto(`${world.base}/#/transactions/${transaction.id}`);
    await page.getByRole('button', { name: 'Cancel and get the money back' }).click();
    await eventually(() => page.getByText('Cancelled: ¥30.00 returned to your available balance.').isVisible()).toBe(true);
    expect(await page.locator('dl.details .badge').first().textContent()).toBe('Cancelled');
    expect(await cashOf(world, publisher.token)).toMatchObject({ available: '150.00', frozen: '50.00' });

    // The same person's wallet in a second tab; the payment is made in the first.
    const wallet = await context.newPage();
    await wallet.goto(`${world.base}/#/sign-in?next=${encodeURIComponent('/wallet')}`);
    await wallet.getByLabel('Email').fill(email);
    await wallet.getByLabel('Password').fill(password);
    await wallet.getByRole('button', { name: 'Sign in', exact: true }).click();
    await wallet.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    const held = wallet.locator('.balance').first().locator('dd').nth(1);
    expect(await held.textContent()).toBe('¥50.00');
    await eventually(() => wallet.locator('#live').textContent()).toBe('Live');
    const rowsBefore = await wallet.locator('.table-scroll tbody tr').count();

    await page.goto(`${world.base}/#/tasks/${second.task.id}`);
    const acceptButton = page.getByRole('button', { name: /^Accept .* for ¥50\.00$/ });
    await acceptButton.click();
    await page.getByRole('heading', { name: 'The work you pay for' }).waitFor();
    await page.getByRole('button', { name: 'Cancel and get the money back' }).waitFor();
    // Accepting released the task's hold and put the same ¥50.00 in escrow: Held stays, the history grows.
    await eventually(() => wallet.locator('.table-scroll tbody tr').count()).toBe(rowsBefore + 2);
    await page.getByRole('button', { name: 'Cancel and get the money back' }).click();
    await eventually(() => page.getByText('Cancelled: ¥50.00 returned to your available balance.').isVisible()).toBe(true);
    await eventually(() => held.textContent()).toBe('¥0.00');
    expect(await wallet.locator('.balance').first().locator('dd').nth(0).textContent()).toBe('¥200.00');
    expect(await wallet.locator('.table-scroll tbody tr').first().innerText()).toContain('Escrow returned: you cancelled the deal');

    // The statistics' caption counts this person's sales, and says so.
    const caption = await wallet.locator('figcaption').first().textContent();
    expect(caption).toBe('CNY: 0 of your sales settled (work you were paid for)');
    expect(problems).toEqual([]);
    await wallet.close();
    await page.close();
  }, 120_000);

  it("1: the wallet joins a hold's two legs by their movement, also when the page of history ends between them", async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const person = await signUpOnPage(page, `break-${unique()}@example.com`);
    await credit(world, person.user_id, '100.00');
    await world.test.http
      .post('/api/v1/tasks/')
      .set(as(person))
      .send({
        title: 'A poster for a bakery',
        description: 'A poster, in detail.',
        mode: 'online',
        category: 'design',
        bounty_amount: '40.00',
        delivery_hours: 24,
      })
      .expect(201);
    // 19 newer entries: the page's 20 end with the hold's first leg (newest first), its other leg opens the next page.
    for (let index = 0; index < 19; index += 1) await credit(world, person.user_id, '1.00');
    const entries = (await world.test.http.get('/api/v1/wallet/transactions?page_size=100').set(as(person)).expect(200)).body.data.items as {
      movement_id: string;
      type: string;
    }[];
    expect(entries).toHaveLength(22);
    expect(entries[19]!.type).toBe('freeze');
    expect(entries[20]!.movement_id).toBe(entries[19]!.movement_id);

    await page.goto(`${world.base}/#/wallet`);
    await page.getByRole('heading', { level: 1, name: 'Wallet' }).waitFor();
    const rows = page.locator('.table-scroll tbody tr');
    await eventually(() => rows.count()).toBe(20);
    // Until the other leg is read, the page shows the one it has: held, not a gain.
    expect(await rows.nth(19).innerText()).toContain('Bounty held for your task');
    await page.getByRole('button', { name: 'Show more' }).click();
    // The other leg joins that row where it stands: one row for the hold, then the first deposit.
    await eventually(() => rows.count()).toBe(21);
    expect(await page.getByRole('button', { name: 'Show more' }).isVisible()).toBe(false);
    const hold = await rows.nth(19).innerText();
    expect(hold).toContain('¥40.00 available → held');
    expect(hold).toContain('¥60.00 available · ¥40.00 held');
    expect(hold).toContain('Bounty held for your task');
    expect(await rows.filter({ hasText: 'Bounty held for your task' }).count()).toBe(1);
    expect(await rows.nth(20).innerText()).toContain('Added by the operator');
    expect(await rows.nth(20).innerText()).toContain('+¥100.00');
    expect(await page.locator('td.negative').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  }, 120_000);
});
