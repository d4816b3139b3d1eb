import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Request } from 'playwright-core';
import { signUpHuman } from '../helpers/actors.ts';
import { apiGet, cashOf, type ConsoleWorld, credit, eventually, openConsole, signUpOnPage, startConsole } from './harness.ts';

/**
 * Journey 3 (work) beyond applying, and journey 6 (live): a skill drawn from a pasted CV and one
 * drafted by the ai-create stream shown as it writes; a publisher's selection answered on the
 * Work page, which matches the task; and a transaction page that keeps following its stream
 * after the connection drops, resuming with Last-Event-ID.
 */
let world: ConsoleWorld;
let publisherContext: BrowserContext;
let workerContext: BrowserContext;
beforeAll(async () => {
  world = await startConsole();
  publisherContext = await world.context();
  workerContext = await world.context();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
const cv = `Senior illustrator with ten years of experience.
I draw children's book illustrations in watercolour and digital ink.
I also design logos and brand identities for small businesses.`;

describe('working through the console', () => {
  it('3: draws skills from a pasted CV, confirming one; drafts one with the ai-create stream shown as it writes', async () => {
    const { page, problems } = await openConsole(workerContext, `${world.base}/`);
    const worker = await signUpOnPage(page, `cv-${unique()}@example.com`);
    await page.goto(`${world.base}/#/skills/new`);
    await page.getByLabel('From my CV').check();
    await page.getByLabel('Paste your CV, portfolio or service description').fill(cv);
    await page.getByRole('button', { name: 'Find skills in it' }).click();
    const first = page.locator('.cards .card').first();
    await eventually(() => first.isVisible()).toBe(true);
    const name = (await first.locator('h3').textContent())!;
    await first.getByRole('button', { name: `Create “${name}”` }).click();
    await eventually(() => first.getByText('Created.').isVisible()).toBe(true);
    const skills = await apiGet(world, worker.token, '/api/v1/skills/');
    expect(skills.data.items!.map((skill) => [skill.name, skill.source])).toContainEqual([name, 'extracted']);

    await page.getByLabel('Draft it for me').check();
    await page.getByLabel('Describe the skill in a sentence or two').fill('I translate product manuals from English to Chinese within two days.');
    await page.getByRole('button', { name: 'Write the draft' }).click();
    // What the stream wrote is on the page, field by field, and the draft fills the form to check.
    await eventually(() => page.getByRole('heading', { name: 'Check the draft' }).isVisible()).toBe(true);
    expect(await page.locator('.writing').textContent()).toContain('name: ');
    expect(await page.getByRole('log', { name: 'Progress' }).textContent()).toContain('Draft ready');
    const review = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Check the draft' }) });
    const drafted = await review.getByLabel('Name').inputValue();
    expect(drafted.length).toBeGreaterThan(0);
    await review.getByRole('button', { name: 'Create the skill' }).click();
    await page.getByRole('heading', { name: 'Work', level: 1 }).waitFor();
    expect(await page.getByText(drafted, { exact: true }).isVisible()).toBe(true);
    expect(problems).toEqual([]);
  });

  it('3 and 6: a selection answered on the Work page matches the task; the transaction page resumes its stream after a drop', async () => {
    const publisher = await openConsole(publisherContext, `${world.base}/`);
    const publisherSession = await signUpOnPage(publisher.page, `selector-${unique()}@example.com`);
    await credit(world, publisherSession.user_id, '200.00');
    const worker = await openConsole(workerContext, `${world.base}/`);
    const workerSession = await signUpOnPage(worker.page, `selected-${unique()}@example.com`);
    const skill = await world.test.http
      .post('/api/v1/skills/')
      .set('Authorization', `Bearer ${workerSession.token}`)
      .send({ name: 'Watercolour illustration', description: 'Children book illustrations in watercolour', category: 'illustration', ut_price: '90' })
      .expect(201);

    const { page } = publisher;
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByLabel('Title').fill('Watercolour illustrations for a children book');
    await page.getByLabel('Description').fill('Twelve watercolour illustrations for a children book.');
    await page.getByLabel('Category').selectOption('illustration');
    await page.getByLabel('Bounty (CNY)').fill('100');
    await page.getByRole('button', { name: 'Publish the task' }).click();
    await eventually(() => page.getByText('Published. ¥100.00 is held for this task.').isVisible()).toBe(true);
    const card = page.locator('.card').filter({ hasText: 'Watercolour illustration' });
    await eventually(() => card.isVisible()).toBe(true);
    await card.getByLabel('Price for Watercolour illustration (CNY)').fill('95');
    await card.getByRole('button', { name: 'Select Watercolour illustration' }).click();
    await eventually(() => page.getByText('selected at ¥95.00').isVisible()).toBe(true);

    const work = worker.page;
    await work.goto(`${world.base}/#/work`);
    const answer = work.getByRole('button', { name: 'Accept the selection for “Watercolour illustrations for a children book”' });
    await eventually(() => answer.isVisible()).toBe(true);
    expect(await work.getByText('You are selected at ¥95.00').isVisible()).toBe(true);
    await answer.click();
    await work.getByRole('heading', { name: 'The work you do' }).waitFor();
    const transactionId = /#\/transactions\/([0-9a-f-]{36})/.exec(work.url())![1]!;
    expect((await apiGet(world, publisherSession.token, `/api/v1/transactions/${transactionId}`)).data).toMatchObject({ status: 'frozen', price_ut: '95.00' });
    // 100.00 held by the task; 95.00 of it paid into escrow, 5.00 back.
    expect(await cashOf(world, publisherSession.token)).toMatchObject({ available: '105.00', frozen: '95.00' });
    expect(skill.body.data.id).toBeTruthy();

    // The publisher follows the transaction; its connection drops; the worker accepts meanwhile.
    await page.goto(`${world.base}/#/transactions/${transactionId}`);
    await eventually(() => page.getByText('Waiting for the worker to accept').isVisible()).toBe(true);
    await eventually(() => page.locator('#live').textContent()).toBe('Live');
    const resumed: string[] = [];
    const watch = (request: Request) => {
      if (request.url().endsWith(`/transactions/${transactionId}/events`) && request.headers()['last-event-id'])
        resumed.push(request.headers()['last-event-id']!);
    };
    page.on('request', watch);
    world.server.closeAllConnections();
    await world.test.http.post(`/api/v1/transactions/${transactionId}/accept`).set('Authorization', `Bearer ${workerSession.token}`).expect(200);
    await eventually(() => page.getByText('The worker accepted and is working on it.').isVisible()).toBe(true);
    expect(resumed.length).toBeGreaterThan(0);
    expect(Number(resumed[0])).toBeGreaterThan(0);
    page.off('request', watch);
    expect(publisher.problems.filter((problem) => !problem.includes('ERR_'))).toEqual([]);
  });

  it('2: a delivery that is not what was agreed is disputed from the page; the money stays held', async () => {
    const publisher = await openConsole(publisherContext, `${world.base}/`);
    const buyer = await signUpOnPage(publisher.page, `disputer-${unique()}@example.com`);
    await credit(world, buyer.user_id, '50.00');
    const seller = await signUpHuman(world.test);
    const as = (token: string) => ({ Authorization: `Bearer ${token}` });
    const skill = (
      await world.test.http.post('/api/v1/skills/').set(as(seller.token)).send({ name: 'Copywriting', description: 'Copy', category: 'copywriting' })
    ).body.data as { id: string };
    const task = (
      await world.test.http
        .post('/api/v1/tasks/')
        .set(as(buyer.token))
        .send({ title: 'A slogan', description: 'Five slogans for a café.', mode: 'online', bounty_amount: '30', delivery_hours: 24 })
    ).body.data as { id: string };
    const application = (await world.test.http.post(`/api/v1/tasks/${task.id}/applications`).set(as(seller.token)).send({ skill_id: skill.id })).body.data as {
      id: string;
    };
    const accepted = (await world.test.http.post(`/api/v1/tasks/${task.id}/applications/${application.id}/accept`).set(as(buyer.token)).send({})).body.data as {
      transaction: { id: string };
    };
    const id = accepted.transaction.id;
    await world.test.http.post(`/api/v1/transactions/${id}/accept`).set(as(seller.token)).expect(200);
    await world.test.http
      .post(`/api/v1/transactions/${id}/deliver`)
      .set(as(seller.token))
      .send({ result_payload: { text: 'One slogan.' } })
      .expect(200);

    const { page } = publisher;
    await page.goto(`${world.base}/#/transactions/${id}`);
    await eventually(() => page.getByText('One slogan.').isVisible()).toBe(true);
    await page.getByLabel('Why (optional)').fill('Five were agreed, one was delivered.');
    await page.getByRole('button', { name: 'Open a dispute' }).click();
    await eventually(() => page.getByText('Disputed: the money stays held until the operator decides.').isVisible()).toBe(true);
    expect((await apiGet(world, buyer.token, `/api/v1/transactions/${id}`)).data).toMatchObject({
      status: 'disputed',
      dispute_reason: 'Five were agreed, one was delivered.',
    });
    expect(await cashOf(world, buyer.token)).toMatchObject({ available: '20.00', frozen: '30.00' });
    expect(publisher.problems).toEqual([]);
  });

  it('2: a task drafted from a sentence by the ai-create stream fills the form; its description made clearer with the changes listed', async () => {
    const { page, problems } = await openConsole(publisherContext, `${world.base}/`);
    await signUpOnPage(page, `drafter-${unique()}@example.com`);
    await page.goto(`${world.base}/#/tasks/new`);
    await page.getByLabel('What do you need done?').fill('Translate a 20-page manual into Chinese within 3 days, budget 300 CNY');
    await page.getByRole('button', { name: 'Write the draft' }).click();
    await eventually(() => page.getByText('Draft ready: the form below is filled in.').isVisible()).toBe(true);
    expect(await page.locator('.writing').textContent()).toContain('title: ');
    expect((await page.getByLabel('Title').inputValue()).length).toBeGreaterThan(0);
    expect(await page.getByLabel('Delivery time (hours)').inputValue()).toBe('72');
    expect(await page.getByLabel('Bounty (CNY)').inputValue()).toBe('300.00');
    // The hold preview follows the bounty the draft filled in.
    expect(await page.locator('#hold-preview').textContent()).toContain('¥300.00');

    await page.getByLabel('Description').fill('translate my manual');
    await page.getByRole('button', { name: 'Make the description clearer' }).click();
    await eventually(() => page.getByText('The description was rewritten. What changed:').isVisible()).toBe(true);
    const rewritten = await page.getByLabel('Description').inputValue();
    expect(rewritten.length).toBeGreaterThan('translate my manual'.length);
    // Asked again, nothing is added twice, and the page says so.
    await page.getByRole('button', { name: 'Make the description clearer' }).click();
    await eventually(() => page.getByText('Nothing to add: the description already has a line for each part.', { exact: false }).isVisible()).toBe(true);
    expect(await page.getByLabel('Description').inputValue()).toBe(rewritten);
    expect(problems).toEqual([]);
  });

  it('2: a deal cancelled before the work is shown as ended, with the task published again from its page; form errors in the page words, the keyboard kept', async () => {
    // The pages of the journeys before hold their event streams open, and Chromium keeps at most six
    // connections to one host across its contexts (HTTP/1.1): a seventh request would wait.
    for (const open of [...publisherContext.pages(), ...workerContext.pages()]) await open.close();
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const publisher = await signUpOnPage(page, `again-${unique()}@example.com`);
    await credit(world, publisher.user_id, '100.00');
    const worker = await signUpHuman(world.test);
    const as = (token: string) => ({ Authorization: `Bearer ${token}` });
    const task = (
      await world.test.http
        .post('/api/v1/tasks/')
        .set(as(publisher.token))
        .send({
          title: 'Proofread a menu',
          description: 'Two pages, English',
          mode: 'online',
          category: 'copywriting',
          bounty_amount: '40.00',
          delivery_hours: 24,
        })
        .expect(201)
    ).body.data;
    const skill = (
      await world.test.http
        .post('/api/v1/skills/')
        .set(worker.headers)
        .send({ name: 'Proofreading', description: 'English', category: 'copywriting' })
        .expect(201)
    ).body.data;
    const application = (await world.test.http.post(`/api/v1/tasks/${task.id}/applications`).set(worker.headers).send({ skill_id: skill.id }).expect(201)).body
      .data;
    const accepted = (
      await world.test.http.post(`/api/v1/tasks/${task.id}/applications/${application.id}/accept`).set(as(publisher.token)).send({}).expect(200)
    ).body.data;
    await world.test.http.post(`/api/v1/transactions/${accepted.transaction.id}/cancel`).set(as(publisher.token)).send({}).expect(200);

    await page.goto(`${world.base}/#/tasks/${task.id}`);
    await eventually(() => page.getByRole('heading', { name: 'The deal ended without the work' }).isVisible()).toBe(true);
    expect(await page.getByText('You can rate once the transaction is settled.').count()).toBe(0);
    // A delivery time that is not a number: the API's answer in the page's words, next to the field, which gets the keyboard.
    await page.getByLabel('Delivery time (hours)').fill('soon');
    await page.getByRole('button', { name: 'Publish it again' }).click();
    await eventually(() => page.getByText('Enter a number.').isVisible()).toBe(true);
    expect(await page.evaluate<string | null>("document.activeElement && document.activeElement.getAttribute('name')")).toBe('delivery_hours');
    await page.getByLabel('Delivery time (hours)').fill('48');
    await page.getByRole('button', { name: 'Publish it again' }).click();
    await page.getByRole('heading', { name: 'Proofread a menu', level: 1 }).waitFor();
    await eventually(async () => page.url()).toContain('published=1');
    const again = page.url().match(/#\/tasks\/([0-9a-f-]{36})/)![1]!;
    expect(again).not.toBe(task.id);
    expect((await apiGet(world, publisher.token, `/api/v1/tasks/${again}`)).data).toMatchObject({ status: 'open', delivery_hours: 48, bounty_amount: '40.00' });
    expect(problems).toEqual([]);
  });

  it(
    '6: four tabs of one person share one connection per stream; each hears every move, and when the leading tab closes another takes over',
    { timeout: 90_000 },
    async () => {
      for (const open of [...publisherContext.pages(), ...workerContext.pages()]) await open.close();
      const context = await world.context();
      const first = await openConsole(context, `${world.base}/`);
      const publisher = await signUpOnPage(first.page, `tabs-${unique()}@example.com`);
      const worker = await signUpHuman(world.test);
      const task = (
        await world.test.http
          .post('/api/v1/tasks/')
          .set('Authorization', `Bearer ${publisher.token}`)
          .send({ title: 'Label a photo set', description: 'Two hundred photos', mode: 'online', category: 'data' })
          .expect(201)
      ).body.data;
      // Each tab keeps its own session: the other three sign in as the same person, with tokens of their own.
      const tabs = [first];
      for (let count = 0; count < 3; count++) {
        const tab = await openConsole(context, `${world.base}/#/sign-in`);
        await tab.page.getByLabel('Email').fill(publisher.email);
        await tab.page.getByLabel('Password').fill('a-good-password-42');
        await tab.page.getByRole('button', { name: 'Sign in', exact: true }).click();
        await eventually(() => tab.page.evaluate<string | null>("sessionStorage.getItem('agent-marketplace.device-page')")).not.toBeNull();
        tabs.push(tab);
      }
      // Which tabs asked the server for the task stream.
      const streaming = new Set<number>();
      tabs.forEach(({ page }, index) => page.on('request', (request) => request.url().endsWith('/api/v1/tasks/events') && streaming.add(index)));
      for (const { page } of tabs) {
        await page.goto(`${world.base}/#/tasks/${task.id}`);
        await page.getByRole('heading', { name: 'Label a photo set', level: 1 }).waitFor();
      }
      const apply = async (name: string) => {
        const skill = (await world.test.http.post('/api/v1/skills/').set(worker.headers).send({ name, description: 'Photos', category: 'data' }).expect(201))
          .body.data;
        await world.test.http.post(`/api/v1/tasks/${task.id}/applications`).set(worker.headers).send({ skill_id: skill.id }).expect(201);
      };
      await apply('Photo labelling by tab test');
      for (const { page } of tabs) await eventually(() => page.getByRole('heading', { name: /Photo labelling by tab test/ }).isVisible()).toBe(true);
      expect(streaming.size).toBe(1);
      // A request from any tab is answered at once: the streams do not use up the browser's connections.
      const publish = await tabs[3]!.page.evaluate(() => fetch('/healthz').then((answer) => answer.status));
      expect(publish).toBe(200);

      const leader = [...streaming][0]!;
      await tabs[leader]!.page.close();
      const rest = tabs.filter((_, index) => index !== leader);
      await apply('Second labeller by tab test');
      for (const { page } of rest) await eventually(() => page.getByRole('heading', { name: /Second labeller by tab test/ }).isVisible()).toBe(true);
      expect(streaming.size).toBe(2);
      for (const { problems } of tabs) expect(problems).toEqual([]);
    },
  );
});
