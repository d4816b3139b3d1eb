import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';

let test: TestApp;
let publisher: Actor;
let owner: Actor;
let stranger: Actor;
let human: Actor;

beforeAll(async () => {
  test = await startTestApp();
  [publisher, owner, stranger] = [await createAgent(test), await createAgent(test), await createAgent(test)];
  human = await signUpHuman(test);
  await credit(test, publisher.userId, '100.00');
});
afterAll(() => test.close());

const skillOf = async (actor: Actor, body: Record<string, unknown>) =>
  (
    await test.http
      .post('/api/v1/skills/')
      .set(actor.headers)
      .send({ category: 'translation', ...body })
      .expect(201)
  ).body.data as { id: string };
const taskOf = async (body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({
        title: 'Translate a German contract into English',
        description: 'A supply contract, twelve pages, legal German',
        mode: 'online',
        category: 'translation',
        ...body,
      })
      .expect(201)
  ).body.data as { id: string };

describe('recommendations', () => {
  it("ranks the space's active skills for the task with the score's parts, leaving out the publisher's own, inactive and other-space skills", async () => {
    const word = `w${randomUUID().slice(0, 6)}`;
    const best = await skillOf(owner, {
      name: `Legal German to English translation ${word}`,
      description: 'Contracts and court papers from German into English',
      ut_price: '30.00',
    });
    const weaker = await skillOf(stranger, { name: `Translation ${word}`, description: 'General translation work' });
    const inactive = await skillOf(stranger, { name: `German contract translation ${word}`, description: 'Contracts from German' });
    await test.http.put(`/api/v1/skills/${inactive.id}`).set(stranger.headers).send({ status: 'inactive' }).expect(200);
    const own = await skillOf(publisher, { name: `German contract translation ${word}`, description: 'Contracts from German into English' });
    await skillOf(human, { name: `German contract translation ${word}`, description: 'Contracts from German into English' });
    const task = await taskOf({ title: `Translate a German contract into English ${word}`, bounty_amount: '40.00' });
    const answer = (await test.http.get(`/api/v1/tasks/${task.id}/recommendations`).set(publisher.headers).query({ top_k: 5 }).expect(200)).body.data;
    const ids = answer.candidates.map((candidate: { skill_id: string }) => candidate.skill_id);
    expect(ids[0]).toBe(best.id);
    expect(ids).toContain(weaker.id);
    expect(ids).not.toContain(inactive.id);
    expect(ids).not.toContain(own.id);
    expect(answer.candidates[0]).toMatchObject({
      name: expect.stringContaining('Legal German'),
      ut_price: '30.00',
      score: expect.any(Number),
      similarity: expect.any(Number),
      price_alignment: 1,
      quality_score: expect.any(Number),
    });
    expect((await test.http.get(`/api/v1/tasks/${task.id}/recommendations`).set(owner.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.get(`/api/v1/tasks/${task.id}/recommendations`).set(publisher.headers).query({ top_k: 0 }).expect(400)).body.code).toBe(4000);
  });
});

describe('pushes and selections', () => {
  it('invites once per skill; the owner accepts into an application or declines; others may not answer', async () => {
    const task = await taskOf();
    const skill = await skillOf(owner, { name: 'Legal translation', description: 'German contracts' });
    const pushed = (
      await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: skill.id, message: 'Interested?' }).expect(201)
    ).body.data;
    expect(pushed).toMatchObject({ kind: 'invitation', status: 'pending', skill_owner_id: owner.userId, price: null });
    expect((await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: skill.id }).expect(409)).body).toMatchObject({
      code: 4092,
      data: { push_id: pushed.id },
    });
    const mine = (await test.http.get('/api/v1/tasks/pushes/mine').set(owner.headers).expect(200)).body.data;
    expect(mine.items.map((item: { id: string }) => item.id)).toContain(pushed.id);
    const respond = (actor: Actor, decision: string) => test.http.post(`/api/v1/tasks/pushes/${pushed.id}/respond`).set(actor.headers).send({ decision });
    expect((await respond(publisher, 'accept').expect(403)).body.code).toBe(4030);
    expect((await respond(stranger, 'accept').expect(404)).body.code).toBe(4040);
    expect((await respond(human, 'accept').expect(404)).body.code).toBe(4040);
    const answered = (await respond(owner, 'accept').expect(200)).body.data;
    expect(answered).toMatchObject({ push: { status: 'accepted' }, application_id: expect.any(String), accepted: null });
    const applications = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).expect(200)).body.data;
    expect(applications.items.map((item: { id: string }) => item.id)).toEqual([answered.application_id]);
    expect((await respond(owner, 'decline').expect(409)).body.code).toBe(4090);
  });

  it('refuses pushes the rules forbid', async () => {
    const task = await taskOf();
    const own = await skillOf(publisher, { name: 'Mine', description: 'Mine' });
    const humanSkill = await skillOf(human, { name: 'Human', description: 'Human' });
    expect((await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: own.id }).expect(403)).body.code).toBe(4030);
    expect((await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: humanSkill.id }).expect(404)).body.code).toBe(
      4040,
    );
    const skill = await skillOf(owner, { name: 'Other', description: 'Other' });
    expect((await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(stranger.headers).send({ skill_id: skill.id }).expect(403)).body.code).toBe(4030);
    expect(
      (await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(publisher.headers).send({ skill_id: skill.id }).expect(400)).body.data.errors[0].path,
    ).toBe('body.price');
  });

  it('a selection the owner accepts matches the task at the selected price; declined, nothing moves', async () => {
    const task = await taskOf({ bounty_amount: '20.00' });
    const skill = await skillOf(owner, { name: 'Legal translation', description: 'German contracts' });
    const declinedSkill = await skillOf(stranger, { name: 'Legal translation', description: 'German contracts' });
    const declined = (
      await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(publisher.headers).send({ skill_id: declinedSkill.id, price: '18.00' }).expect(201)
    ).body.data;
    expect(
      (await test.http.post(`/api/v1/tasks/pushes/${declined.id}/respond`).set(stranger.headers).send({ decision: 'decline' }).expect(200)).body.data.push
        .status,
    ).toBe('declined');
    const before = await balance(test, publisher);
    const selected = (
      await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(publisher.headers).send({ skill_id: skill.id, price: '15.00' }).expect(201)
    ).body.data;
    expect(selected).toMatchObject({ kind: 'selection', price: '15.00' });
    expect(await balance(test, publisher)).toEqual(before);
    const answered = (await test.http.post(`/api/v1/tasks/pushes/${selected.id}/respond`).set(owner.headers).send({ decision: 'accept' }).expect(200)).body
      .data;
    expect(answered.accepted.task).toMatchObject({ status: 'matched', matched_skill_id: skill.id });
    expect(answered.accepted.transaction).toMatchObject({ status: 'frozen', price_ut: '15.00', seller_user_id: owner.userId, buyer_user_id: publisher.userId });
    expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
  });
});
