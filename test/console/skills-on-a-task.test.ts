import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpHuman } from '../helpers/actors.ts';
import { apiGet, type ConsoleWorld, credit, eventually, openConsole, signUpOnPage, startConsole } from './harness.ts';

/**
 * Skills on a task's page (found by an outside walk-through): the publisher's "Recommended" list
 * leaves out a skill that has applied to the task already, also when the application arrives
 * while the page is open; and a worker without a skill who follows "Create a skill" from the
 * task's Apply box comes back to that task, with the new skill chosen, instead of to Work.
 */
let world: ConsoleWorld;
beforeAll(async () => {
  world = await startConsole();
});
afterAll(() => world?.close());

const unique = () => Math.random().toString(36).slice(2, 8);
const as = (token: string) => ({ Authorization: `Bearer ${token}` });

async function taskOf(token: string, title: string) {
  return (
    await world.test.http
      .post('/api/v1/tasks/')
      .set(as(token))
      .send({
        title,
        description: 'A supply contract, twelve pages, legal German',
        mode: 'online',
        category: 'translation',
        bounty_amount: '40.00',
        delivery_hours: 24,
      })
      .expect(201)
  ).body.data as { id: string };
}

describe('skills on a task page', () => {
  it('2: Recommended leaves out a skill that has applied, as soon as its application arrives; the application is answered under Applications', async () => {
    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const publisher = await signUpOnPage(page, `recommends-${unique()}@example.com`);
    await credit(world, publisher.user_id, '100.00');
    const word = `w${unique()}`;
    const [first, second] = [await signUpHuman(world.test), await signUpHuman(world.test)];
    const skillOf = async (headers: Record<string, string>, name: string) =>
      (
        await world.test.http
          .post('/api/v1/skills/')
          .set(headers)
          .send({ name, description: 'Contracts and court papers from German into English', category: 'translation', ut_price: '30.00' })
          .expect(201)
      ).body.data as { id: string };
    const applying = `Legal German translation ${word}`;
    const other = `German contract translation ${word}`;
    const applyingSkill = await skillOf(first.headers, applying);
    await skillOf(second.headers, other);
    const task = await taskOf(publisher.token, `Translate a German contract into English ${word}`);

    await page.goto(`${world.base}/#/tasks/${task.id}`);
    await page.getByRole('heading', { level: 1, name: `Translate a German contract into English ${word}` }).waitFor();
    const recommended = page.locator('ul.cards').filter({ has: page.getByRole('button', { name: /^Invite / }) });
    await eventually(() => recommended.locator('h3').allTextContents()).toEqual(expect.arrayContaining([applying, other]));
    await eventually(() => page.locator('#live').textContent()).toBe('Live');

    // The first worker applies while the publisher's page is open: their skill leaves Recommended.
    await world.test.http.post(`/api/v1/tasks/${task.id}/applications`).set(first.headers).send({ skill_id: applyingSkill.id }).expect(201);
    await eventually(() => page.getByRole('button', { name: `Accept ${applying} for ¥40.00` }).isVisible()).toBe(true);
    await eventually(() => recommended.locator('h3').allTextContents()).not.toContain(applying);
    expect(await recommended.locator('h3').allTextContents()).toContain(other);
    expect(await page.getByRole('button', { name: `Invite ${applying}` }).count()).toBe(0);

    // Read again from the start, the same.
    await page.reload();
    await page.getByRole('button', { name: `Accept ${applying} for ¥40.00` }).waitFor();
    await eventually(() => recommended.locator('h3').allTextContents()).toContain(other);
    expect(await recommended.locator('h3').allTextContents()).not.toContain(applying);
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);

  it('3: "Create a skill" from a task\'s Apply box brings the worker back to that task, the new skill chosen, and they apply with it', async () => {
    const publisherAccount = await signUpHuman(world.test);
    await credit(world, publisherAccount.userId, '100.00');
    const title = `Translate a German contract ${unique()}`;
    const task = await taskOf(publisherAccount.token, title);

    const { page, problems } = await openConsole(await world.context(), `${world.base}/`);
    const worker = await signUpOnPage(page, `first-skill-${unique()}@example.com`);
    await page.goto(`${world.base}/#/tasks/${task.id}`);
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
    await eventually(() => page.getByText('You need an active skill to apply.').isVisible()).toBe(true);
    await page.getByRole('link', { name: 'Create a skill' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create a skill' }).waitFor();
    expect(await page.getByRole('link', { name: 'Back to the task' }).getAttribute('href')).toBe(`#/tasks/${task.id}`);
    await page.getByLabel('Name').fill('German to English legal translation');
    await page.getByLabel('Description').fill('Contracts and court papers.');
    await page.getByLabel('Category').selectOption('translation');
    await page.getByRole('button', { name: 'Create the skill' }).click();

    // Back on the task, not on Work: the Apply box now has the new skill, chosen.
    await page.getByRole('heading', { level: 1, name: title }).waitFor();
    expect(page.url()).toContain(`#/tasks/${task.id}`);
    const chosen = page.getByLabel('With your skill');
    await chosen.waitFor();
    expect(await chosen.locator('option:checked').textContent()).toBe('German to English legal translation');
    await page.getByRole('button', { name: 'Send the application' }).click();
    await eventually(() => page.getByText('Waiting for an answer').isVisible()).toBe(true);
    const skills = await apiGet(world, worker.token, '/api/v1/skills/');
    const applications = await apiGet(world, worker.token, '/api/v1/tasks/applications/mine');
    expect(applications.data.items!.map((application) => [application.task_id, application.skill_id])).toEqual([[task.id, skills.data.items![0]!.id]]);

    // Without a task to go back to, a new skill still leads to Work.
    await page.goto(`${world.base}/#/skills/new`);
    await page.getByRole('heading', { level: 1, name: 'Create a skill' }).waitFor();
    expect(await page.getByRole('link', { name: 'Back to the task' }).count()).toBe(0);
    await page.getByLabel('Name').fill('Court interpreting');
    await page.getByLabel('Description').fill('German and English.');
    await page.getByLabel('Category').selectOption('translation');
    await page.getByRole('button', { name: 'Create the skill' }).click();
    await page.getByRole('heading', { level: 1, name: 'Work' }).waitFor();
    expect(problems).toEqual([]);
    await page.close();
  }, 90_000);
});
