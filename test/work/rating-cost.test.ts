import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qualityScoreOf } from '../../src/domain/skills.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { credit } from '../helpers/market.ts';

/**
 * Issue 28 point 4: a rating moves a skill's quality score only when it costs something. A loop of
 * free tasks between two accounts, or many small paid ones, must not raise the score; a paying
 * customer's rating still counts, once per skill within limits.skillRatingCountedWindowMs.
 */
let test: TestApp;

beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Rated = { skill_id: string; score: number; quality_score: number; rating_count: number; counted: boolean };

const newSkill = async (owner: Actor) =>
  (await test.http.post('/api/v1/skills/').set(owner.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)).body
    .data as { id: string };
const act = (actor: Actor, transactionId: string, action: string, body: Record<string, unknown> = {}) =>
  test.http.post(`/api/v1/transactions/${transactionId}/${action}`).set(actor.headers).send(body).expect(200);

/** One task from publish to settlement, as the two users do it over REST: the publisher pays `bounty` to the worker's skill. */
async function settledTask(publisher: Actor, worker: Actor, skillId: string, bounty: string) {
  const task = (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ title: 'Logo for a bakery', description: 'Three concepts', mode: 'online', category: 'design', bounty_amount: bounty })
      .expect(201)
  ).body.data;
  const application = (await test.http.post(`/api/v1/tasks/${task.id}/applications`).set(worker.headers).send({ skill_id: skillId }).expect(201)).body.data;
  const accepted = (await test.http.post(`/api/v1/tasks/${task.id}/applications/${application.id}/accept`).set(publisher.headers).send({}).expect(200)).body
    .data;
  const transactionId = accepted.transaction.id as string;
  await act(worker, transactionId, 'accept');
  await act(worker, transactionId, 'deliver', { result_payload: { files: ['logo.svg'] } });
  expect((await act(publisher, transactionId, 'confirm')).body.data.status).toBe('settled');
  return task.id as string;
}
const rate = (publisher: Actor, taskId: string, score = 5) => test.http.post(`/api/v1/tasks/${taskId}/rating`).set(publisher.headers).send({ score });
const skillOf = async (viewer: Actor, skillId: string) => (await test.http.get(`/api/v1/skills/${skillId}`).set(viewer.headers).expect(200)).body.data;
const ratingsOf = async (viewer: Actor, skillId: string) =>
  (await test.http.get(`/api/v1/skills/${skillId}/ratings`).set(viewer.headers).query({ page_size: 100 }).expect(200)).body.data;

async function pair(funds = '100.00') {
  const [publisher, worker] = [await createAgent(test), await createAgent(test)];
  await credit(test, publisher.userId, funds);
  return { publisher, worker, skill: await newSkill(worker) };
}

describe('ratings that cost nothing', () => {
  it('a loop of 0.00-bounty tasks between two accounts leaves the quality score where it was, and shows each rating as not counted', async () => {
    const { publisher, worker, skill } = await pair();
    for (let round = 0; round < 3; round++) {
      const taskId = await settledTask(publisher, worker, skill.id, '0.00');
      const rated = (await rate(publisher, taskId).expect(201)).body.data as Rated;
      expect(rated).toMatchObject({ skill_id: skill.id, score: 5, counted: false, rating_count: 0, quality_score: qualityScoreOf(0, 0) });
    }
    expect(await skillOf(worker, skill.id)).toMatchObject({ quality_score: qualityScoreOf(0, 0), rating_count: 0, rating_average: null });
    const listed = await ratingsOf(publisher, skill.id);
    expect(listed).toMatchObject({ count: 0, total: 3, quality_score: qualityScoreOf(0, 0), average: null });
    expect(listed.items.map((item: { counted: boolean }) => item.counted)).toEqual([false, false, false]);
  });

  it('repeated paid tasks between the same two accounts count once per window; another paying customer counts too', async () => {
    const { publisher, worker, skill } = await pair();
    for (let round = 0; round < 3; round++) {
      const taskId = await settledTask(publisher, worker, skill.id, '0.01');
      expect((await rate(publisher, taskId).expect(201)).body.data).toMatchObject({ counted: round === 0, rating_count: 1 });
    }
    expect(await skillOf(worker, skill.id)).toMatchObject({ quality_score: qualityScoreOf(1, 5), rating_count: 1 });
    const other = await createAgent(test);
    await credit(test, other.userId, '10.00');
    expect((await rate(other, await settledTask(other, worker, skill.id, '2.00'), 4).expect(201)).body.data).toMatchObject({
      counted: true,
      rating_count: 2,
      quality_score: qualityScoreOf(2, 9),
    });
    // Past the window the same customer's next paid rating counts again.
    test.clock.advanceMs(limits.skillRatingCountedWindowMs + 1000);
    const later = await settledTask(publisher, worker, skill.id, '1.00');
    expect((await rate(publisher, later, 3).expect(201)).body.data).toMatchObject({ counted: true, rating_count: 3, quality_score: qualityScoreOf(3, 12) });
    expect(await ratingsOf(worker, skill.id)).toMatchObject({ count: 3, total: 5, average: 4 });
  });

  it(raceTest('rating many settled paid tasks of one skill at once counts one of them'), async () => {
    const { publisher, worker, skill } = await pair();
    const taskIds: string[] = [];
    for (let round = 0; round < 6; round++) taskIds.push(await settledTask(publisher, worker, skill.id, '1.00'));
    const answers = await Promise.all(taskIds.map((taskId) => rate(publisher, taskId)));
    expect(answers.map((answer) => answer.status)).toEqual(taskIds.map(() => 201));
    expect(answers.filter((answer) => answer.body.data.counted)).toHaveLength(1);
    expect(await skillOf(worker, skill.id)).toMatchObject({ rating_count: 1, quality_score: qualityScoreOf(1, 5) });
    expect(await ratingsOf(worker, skill.id)).toMatchObject({ count: 1, total: 6 });
  });
});
