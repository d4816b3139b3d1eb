import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { qualityScoreOf } from '../../src/domain/skills.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';

let test: TestApp;
let owner: Actor;
let raters: Actor[];
let human: Actor;

beforeAll(async () => {
  test = await startTestApp();
  owner = await createAgent(test);
  human = await signUpHuman(test);
  raters = [];
  for (let index = 0; index < 5; index++) raters.push(await createAgent(test));
});
afterAll(() => test.close());

const newSkill = async (body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post('/api/v1/skills/')
      .set(owner.headers)
      .send({ name: 'Proofreading', description: 'English proofreading', category: 'copywriting', ...body })
      .expect(201)
  ).body.data as { id: string };
/** A rating of a paid transaction (100 minor units) unless `paid` says otherwise; true when it was stored. */
const rate = async (skillId: string, rater: Actor, score: number, taskId: string | null = randomUUID(), comment: string | null = null, paid = 100n) =>
  (await test.runtime.engine.skills.recordRating({ skill_id: skillId, rater_user_id: rater.userId, task_id: taskId, score, comment, paid_amount: paid })) !==
  null;
const ratingsOf = async (skillId: string, query: Record<string, unknown> = {}, actor: Actor = raters[0]!) =>
  (await test.http.get(`/api/v1/skills/${skillId}/ratings`).set(actor.headers).query(query).expect(200)).body.data;

describe('the quality score', () => {
  it('is the Bayesian average: the prior alone, then pulled towards the ratings as they add up', () => {
    expect(qualityScoreOf(0, 0)).toBe(3);
    expect(qualityScoreOf(1, 5)).toBe(3.333);
    expect(qualityScoreOf(50, 250)).toBe(4.818);
    expect(qualityScoreOf(2, 2)).toBe(2.429);
  });
});

describe('GET /api/v1/skills/{skill_id}/ratings', () => {
  it('lists the ratings newest first with their average, count and quality, as the skill shows them', async () => {
    const skill = await newSkill();
    await rate(skill.id, raters[0]!, 5, randomUUID(), 'Fast and careful');
    test.clock.advanceMs(1000);
    await rate(skill.id, raters[1]!, 4);
    test.clock.advanceMs(1000);
    await rate(skill.id, raters[2]!, 2);
    const page = await ratingsOf(skill.id);
    expect(page).toMatchObject({ skill_id: skill.id, count: 3, average: 3.67, quality_score: qualityScoreOf(3, 11), total: 3, has_more: false });
    expect(page.items.map((item: { score: number }) => item.score)).toEqual([2, 4, 5]);
    expect(page.items[2]).toMatchObject({ rater_user_id: raters[0]!.userId, comment: 'Fast and careful', skill_id: skill.id });
    const shown = (await test.http.get(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(200)).body.data;
    expect(shown).toMatchObject({ rating_count: 3, rating_average: 3.67, quality_score: qualityScoreOf(3, 11) });
  });

  it('pages with page/page_size and with the cursor', async () => {
    const skill = await newSkill();
    for (let index = 0; index < 5; index++) {
      await rate(skill.id, raters[index]!, (index % 5) + 1);
      test.clock.advanceMs(1000);
    }
    const first = await ratingsOf(skill.id, { page_size: 2 });
    expect(first).toMatchObject({ total: 5, has_more: true, count: 5 });
    const second = await ratingsOf(skill.id, { page_size: 2, cursor: first.next_cursor });
    const third = await ratingsOf(skill.id, { page_size: 2, page: 3 });
    const seen = [...first.items, ...second.items, ...third.items].map((item: { id: string }) => item.id);
    expect(new Set(seen).size).toBe(5);
    expect(third.has_more).toBe(false);
  });

  it('stores one rating per rater and task: a repeated one changes nothing', async () => {
    const skill = await newSkill();
    const task = randomUUID();
    expect(await rate(skill.id, raters[0]!, 5, task)).toBe(true);
    expect(await rate(skill.id, raters[0]!, 1, task)).toBe(false);
    expect(await rate(skill.id, raters[0]!, 1, null)).toBe(true);
    expect(await rate(skill.id, raters[0]!, 1, null)).toBe(false);
    // The rater's second rating of the skill within the window is stored, shown, and not counted.
    const page = await ratingsOf(skill.id);
    expect(page).toMatchObject({ count: 1, total: 2, average: 5, quality_score: qualityScoreOf(1, 5) });
    expect(page.items.map((item: { score: number; counted: boolean }) => [item.score, item.counted])).toEqual([
      [1, false],
      [5, true],
    ]);
  });

  it('counts a rating only when its transaction moved money', async () => {
    const skill = await newSkill();
    expect(await rate(skill.id, raters[0]!, 5, randomUUID(), null, 0n)).toBe(true);
    expect(await ratingsOf(skill.id)).toMatchObject({ count: 0, total: 1, average: null, quality_score: qualityScoreOf(0, 0) });
    expect(await rate(skill.id, raters[0]!, 4, randomUUID(), null, 1n)).toBe(true);
    expect(await ratingsOf(skill.id)).toMatchObject({ count: 1, total: 2, average: 4, quality_score: qualityScoreOf(1, 4) });
  });

  it('refuses scores outside 1..5 and ratings of skills that do not exist', async () => {
    const skill = await newSkill();
    for (const score of [0, 6, 2.5, Number.NaN]) await expect(rate(skill.id, raters[0]!, score)).rejects.toMatchObject({ code: 4000 });
    await expect(rate(randomUUID(), raters[0]!, 3)).rejects.toMatchObject({ code: 4040 });
    expect(await ratingsOf(skill.id)).toMatchObject({ count: 0, average: null, quality_score: 3, items: [] });
  });

  it(raceTest('stores forty parallel ratings and counts exactly one per rater (count, sum and quality agree)'), async () => {
    const skill = await newSkill();
    const scores = Array.from({ length: 40 }, (_, index) => (index % 5) + 1);
    await Promise.all(scores.map((score, index) => rate(skill.id, raters[index % 5]!, score)));
    const page = await ratingsOf(skill.id, { page_size: 100 });
    const counted = page.items.filter((item: { counted: boolean }) => item.counted) as { score: number; rater_user_id: string }[];
    expect(new Set(counted.map((item) => item.rater_user_id)).size).toBe(5);
    const sum = counted.reduce((total, item) => total + item.score, 0);
    expect(page).toMatchObject({ count: 5, total: 40, average: sum / 5, quality_score: qualityScoreOf(5, sum) });
  });

  it("stays readable after the skill is deleted, in the skill's space only", async () => {
    const skill = await newSkill();
    await rate(skill.id, raters[0]!, 4);
    await test.http.delete(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(200);
    expect(await ratingsOf(skill.id)).toMatchObject({ count: 1 });
    expect((await test.http.get(`/api/v1/skills/${skill.id}/ratings`).set(human.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get(`/api/v1/skills/${randomUUID()}/ratings`).set(owner.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get(`/api/v1/skills/${skill.id}/ratings`).expect(401)).body.code).toBe(4010);
    expect((await test.http.get(`/api/v1/skills/${skill.id}/ratings`).set(owner.headers).query({ page_size: 0 }).expect(400)).body.code).toBe(4000);
  });
});
