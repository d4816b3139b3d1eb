import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { signUpHuman } from '../helpers/actors.ts';
import { type ConsoleWorld, credit, eventually, openConsole, seriousViolations, signUpOnPage, startConsole } from './harness.ts';

/**
 * What people type and what the page says back (an outside walk-through found these): the API's
 * sentences and field names in the page's words in both languages, amounts the page cannot read
 * said as such, a draft's notice from the wallet as it is, a form kept across an ended session,
 * and small wording: the hall's lead, Chinese punctuation, the device page's key list and dates.
 */
let world: ConsoleWorld;
beforeAll(async () => {
  world = await startConsole();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
const errorOf = async (page: Page, label: string) => {
  const id = await page.getByLabel(label).getAttribute('id');
  return page.locator(`#${id!}-error`).textContent();
};

describe('the API’s sentences in the page’s words', () => {
  it('3 and 7: the task hall names the other field and states a bound as money, in English and Chinese', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    await page.getByLabel('Lowest bounty (CNY)').fill('100');
    await page.getByLabel('Highest bounty (CNY)').fill('10');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(() => errorOf(page, 'Highest bounty (CNY)')).toBe('Must not be less than “Lowest bounty (CNY)”.');
    await page.getByLabel('Highest bounty (CNY)').fill('20000000000000');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await eventually(() => errorOf(page, 'Highest bounty (CNY)')).toBe('At most ¥10,000,000,000,000.00.');
    // Signed out, the lead asks to sign in and the notice links to it; Chinese punctuation around the link.
    expect(await page.getByText('Sign in to apply with one of your skills.').isVisible()).toBe(true);
    await page.getByRole('button', { name: '中文' }).click();
    await page.getByRole('heading', { level: 1, name: '任务大厅' }).waitFor();
    expect(await page.locator('p.notice').first().textContent()).toBe('你正在以访客身份浏览。要发布任务或申请，请登录或注册。');
    await page.getByLabel('最低赏金（元）').fill('100');
    await page.getByLabel('最高赏金（元）').fill('10');
    await page.getByRole('button', { name: '搜索', exact: true }).click();
    await eventually(() => errorOf(page, '最高赏金（元）')).toBe('不能小于「最低赏金（元）」。');
    await page.goto(`${world.base}/#/sign-in`);
    await page.getByRole('heading', { level: 1, name: '登录' }).waitFor();
    expect(await page.locator('label').first().textContent()).toBe('邮箱（必填）');
    await page.getByRole('button', { name: 'English' }).click();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('3: sign-up in Chinese: a weak password and a taken email are said in Chinese only; a budget’s capability id likewise', async () => {
    const taken = await signUpHuman(world.test);
    const context = await world.context('zh-CN');
    const { page, problems } = await openConsole(context, `${world.base}/#/sign-in?mode=sign-up`);
    await page.getByRole('heading', { level: 1, name: '注册账号' }).waitFor();
    await page.getByLabel('邮箱').fill(`weak-${unique()}@example.com`);
    await page.getByLabel('密码').fill('onlyletters');
    await page.getByRole('button', { name: '注册', exact: true }).click();
    await eventually(() => errorOf(page, '密码')).toBe('请将字母与数字或符号混合使用。');
    expect(await page.locator('#view').innerText()).not.toContain('must');
    await page.getByLabel('邮箱').fill(taken.email);
    await page.getByLabel('密码').fill('a-good-password-42');
    await page.getByRole('button', { name: '注册', exact: true }).click();
    const alert = page.getByRole('alert');
    await eventually(() => alert.textContent()).toContain('这个邮箱已经注册过。');
    expect(await alert.textContent()).not.toMatch(/[A-Za-z]{3,}/);

    // A key, its budget form, a capability id that is no id.
    await page.getByLabel('邮箱').fill(`budget-${unique()}@example.com`);
    await page.getByRole('button', { name: '注册', exact: true }).click();
    await page.waitForURL(/#\/$/);
    await page.goto(`${world.base}/#/agents`);
    // The agents page's own heading: the page left behind has an h1 too until the new view is drawn.
    await page.getByRole('heading', { level: 1, name: '我的智能体' }).waitFor();
    await page.getByLabel('智能体名称').fill('Budget bot');
    await page.getByRole('button', { name: '创建密钥' }).click();
    const summary = page.locator('details.budget-edit summary').first();
    await eventually(() => summary.isVisible()).toBe(true);
    await summary.click();
    const budgetForm = page.locator('details.budget-edit form').first();
    await budgetForm.locator('textarea[name="capability_ids"]').fill('not-an-id');
    await budgetForm.locator('button[type="submit"]').click();
    const capabilityError = budgetForm.locator('textarea[name="capability_ids"] ~ .field-error');
    await eventually(() => capabilityError.textContent()).toBe('第 1 项：请填写 36 个字符的 ID，例如 3f2b8c1e-0a4d-4c8e-9b7a-1d2e3f4a5b6c。');
    expect(await budgetForm.innerText()).not.toContain('UUID');
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});

describe('publishing: amounts, the draft and an ended session', () => {
  it('7: a bounty the page cannot read is said as such, never as "no bounty"; too large says the largest amount', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const person = await signUpOnPage(page, `amounts-${unique()}@example.com`);
    await credit(world, person.user_id, '500.00');
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByRole('heading', { level: 1, name: 'Publish a task' }).waitFor();
    const bounty = page.getByLabel('Bounty (CNY)');
    const preview = page.locator('#hold-preview');
    const cases: [string, string][] = [
      ['1e5', 'Write the amount in digits'],
      ['-5', 'An amount cannot be below zero.'],
      ['12.345', 'Use at most two decimals'],
      ['100,50', 'without commas'],
      ['12345678901234567890', 'more than the largest amount the market takes, ¥10,000,000,000,000.00'],
    ];
    for (const [typed, said] of cases) {
      await bounty.fill(typed);
      await eventually(() => preview.textContent()).toContain(said);
      expect(await preview.textContent(), typed).toContain('The bounty is not an amount yet');
      expect(await preview.textContent(), typed).not.toContain('With no bounty');
    }
    // Full-width digits from a Chinese keyboard read as the amount they are.
    await bounty.fill('１２０');
    await eventually(() => preview.textContent()).toContain('Publishing holds ¥120.00. After: ¥380.00 available, ¥120.00 held.');
    await page.getByLabel('Title').fill('A poster');
    await page.getByLabel('Description').fill('A3, two colours.');
    await bounty.fill('99999999999999');
    await page.getByRole('button', { name: 'Publish the task' }).click();
    await eventually(() => errorOf(page, 'Bounty (CNY)')).toBe('That is more than the largest amount the market takes, ¥10,000,000,000,000.00.');
    expect(problems).toEqual([]);
    await page.close();
  });

  it('2 and 10: a draft’s notice follows the wallet, not the address; the task says its delivery time once', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const person = await signUpOnPage(page, `draft-${unique()}@example.com`);
    // Signed in, the hall's lead does not ask to sign in.
    await page.getByRole('link', { name: 'Task hall' }).click();
    await page.getByRole('heading', { level: 1, name: 'Task hall' }).waitFor();
    expect(await page.locator('p.lead').textContent()).toContain('Open one to apply with one of your skills.');
    expect(await page.locator('#view').innerText()).not.toContain('Sign in to apply');
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByLabel('Title').fill('A flyer');
    await page.getByLabel('Description').fill('A5, both sides.');
    await page.getByLabel('Delivery time (hours)').fill('48');
    await page.getByLabel('Bounty (CNY)').fill('30');
    await page.getByRole('button', { name: 'Publish the task' }).click();
    const notice = page.locator('#draft-notice');
    await eventually(() => notice.textContent()).toContain('Kept as a draft: your available balance is ¥0.00 and the bounty needs ¥30.00.');
    const dd = await page.locator('dl.details dd').allTextContents();
    expect(dd).toContain('48 hours');
    expect(dd.join(' ')).not.toContain('delivery in');

    // Money arrives; the reloaded page says what the preview says.
    await credit(world, person.user_id, '30.00');
    await page.reload();
    await eventually(() => notice.textContent()).toContain('Your available balance, ¥30.00, now covers the bounty of ¥30.00');
    expect(await notice.textContent()).not.toContain('¥0.00');
    expect(await page.locator('form .notice').textContent()).toContain('Publishing holds ¥30.00. After: ¥0.00 available, ¥30.00 held.');
    // More money while the page stays open: coming back to the tab reads the wallet again.
    await credit(world, person.user_id, '5.00');
    await page.evaluate("window.dispatchEvent(new Event('focus'))");
    await eventually(() => notice.textContent()).toContain('Your available balance, ¥35.00, now covers');
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('6: a session that ends while publishing keeps the title and description for after signing in again', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const email = `ended-${unique()}@example.com`;
    const person = await signUpOnPage(page, email);
    await credit(world, person.user_id, '100.00');
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByRole('heading', { level: 1, name: 'Publish a task' }).waitFor();
    await page.getByLabel('Title').fill('Translate a leaflet');
    await page.getByLabel('Description').fill('One page, English to Chinese.');
    await page.getByLabel('Bounty (CNY)').fill('25');
    // The server answers this one publish as for an ended session.
    await page.route(
      (url) => url.pathname === '/api/v1/tasks/',
      (route) =>
        route.request().method() === 'POST'
          ? route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ code: 4010, message: 'unauthorized', data: null }) })
          : route.continue(),
      { times: 1 },
    );
    await page.getByRole('button', { name: 'Publish the task' }).click();
    await eventually(() => page.getByText('Your session has ended. Please sign in again.').isVisible()).toBe(true);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('a-good-password-42');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Publish a task' }).waitFor();
    expect(await page.getByLabel('Title').inputValue()).toBe('Translate a leaflet');
    expect(await page.getByLabel('Description').inputValue()).toBe('One page, English to Chinese.');
    expect(await page.getByLabel('Bounty (CNY)').inputValue()).toBe('25');
    expect(await page.getByText('What you typed before was kept').isVisible()).toBe(true);
    expect(await page.locator('#hold-preview').textContent()).toContain('Publishing holds ¥25.00');
    await page.getByRole('button', { name: 'Publish the task' }).click();
    await eventually(async () => page.url()).toContain('published=1');
    // Sent, the draft is gone: the form starts empty next time.
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByRole('heading', { level: 1, name: 'Publish a task' }).waitFor();
    expect(await page.getByLabel('Title').inputValue()).toBe('');
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('the device page', () => {
  it('10: after Approve the key appears in the list by itself, its date written as the console writes dates', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    await signUpOnPage(page, `device-${unique()}@example.com`);
    const started = (await world.test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'claude_code' })).body.data as {
      device_code: string;
      verification_url_complete: string;
    };
    await page.goto(started.verification_url_complete);
    await page.getByRole('button', { name: 'Approve' }).click();
    await eventually(() => page.getByRole('heading', { name: 'Approved' }).isVisible()).toBe(true);
    expect(await page.locator('#keys-empty').isVisible()).toBe(true);
    // The application collects its key; nobody presses "Refresh the list".
    world.test.clock.advanceMs(10_000);
    const collected = await world.test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: started.device_code }).expect(200);
    expect(collected.body.code).toBe(0);
    await eventually(() => page.locator('#keys-list li').count()).toBe(1);
    expect(await page.locator('#keys-empty').isVisible()).toBe(false);
    await eventually(() => page.locator('#status').textContent()).toBe('The key of Claude Code is now in your list.');
    expect(await page.locator('#keys-list').textContent()).toMatch(/created \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}/);
    expect(problems).toEqual([]);
    await page.close();
  });
});
