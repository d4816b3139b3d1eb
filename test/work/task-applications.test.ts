import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applicationActions, applicationStatuses, applicationTransitionTable, nextApplicationState } from '../../src/domain/tasks.ts';
import { type Actor, createAgent, createApiKey, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { admin } from '../helpers/market.ts';
import * as endedTaskApplications from '../../src/db/migrations/076_ended_task_applications.ts';
import { limits } from '../../src/limits.ts';

let test: TestApp;
let publisher: Actor;
let applicant: Actor;
let bystander: Actor;
let human: Actor;

beforeAll(async () => {
  test = await startTestApp();
  [publisher, applicant, bystander] = [await createAgent(test), await createAgent(test), await createAgent(test)];
  human = await signUpHuman(test);
});
afterAll(() => test.close());

type Application = { id: string; status: string; task_id: string; skill_id: string; applicant_id: string; proposed_price: string | null };
const newTask = async (owner: Actor = publisher) =>
  (
    await test.http
      .post('/api/v1/tasks/')
      .set(owner.headers)
      .send({ title: 'Proofread a thesis', description: 'Eighty pages of English', mode: 'online', category: 'academic' })
      .expect(201)
  ).body.data as { id: string };
const newSkill = async (owner: Actor = applicant, body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post('/api/v1/skills/')
      .set(owner.headers)
      .send({ name: 'Proofreading', description: 'Academic English', category: 'academic', ...body })
      .expect(201)
  ).body.data as { id: string };
const apply = (actor: Actor, taskId: string, body: Record<string, unknown>) =>
  test.http.post(`/api/v1/tasks/${taskId}/applications`).set(actor.headers).send(body);

describe('applying to a task', () => {
  it("applies with an active skill of one's own to an open task of the same space", async () => {
    const task = await newTask();
    const skill = await newSkill();
    const created = (
      await apply(applicant, task.id, {
        skill_id: skill.id,
        message: 'I did forty theses',
        proposed_price: '45.00',
        proposed_billing_model: 'fixed',
        proposed_quantity: 1,
      }).expect(201)
    ).body.data;
    expect(created).toMatchObject({
      task_id: task.id,
      skill_id: skill.id,
      applicant_id: applicant.userId,
      status: 'pending',
      proposed_price: '45.00',
      message: 'I did forty theses',
      decided_at: null,
    });
    const listed = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).expect(200)).body.data;
    expect(listed.items.map((item: Application) => item.id)).toEqual([created.id]);
    const mine = (await test.http.get('/api/v1/tasks/applications/mine').set(applicant.headers).expect(200)).body.data;
    expect(mine.items.map((item: Application) => item.id)).toContain(created.id);
  });

  it('refuses what the rules forbid, each with its code', async () => {
    const task = await newTask();
    const skill = await newSkill();
    const ownSkillOfPublisher = await newSkill(publisher);
    expect((await apply(publisher, task.id, { skill_id: ownSkillOfPublisher.id }).expect(403)).body.code).toBe(4030);
    expect((await apply(bystander, task.id, { skill_id: skill.id }).expect(403)).body.code).toBe(4030);
    expect((await apply(human, task.id, { skill_id: skill.id }).expect(404)).body.code).toBe(4040);
    const humanSkill = await newSkill(human);
    expect((await apply(applicant, task.id, { skill_id: humanSkill.id }).expect(404)).body.code).toBe(4040);
    const inactive = await newSkill(applicant);
    await test.http.put(`/api/v1/skills/${inactive.id}`).set(applicant.headers).send({ status: 'inactive' }).expect(200);
    expect((await apply(applicant, task.id, { skill_id: inactive.id }).expect(409)).body).toMatchObject({
      code: 4090,
      data: { status: 'inactive', action: 'apply' },
    });
    const deleted = await newSkill(applicant);
    await test.http.delete(`/api/v1/skills/${deleted.id}`).set(applicant.headers).expect(200);
    expect((await apply(applicant, task.id, { skill_id: deleted.id }).expect(404)).body.code).toBe(4040);
    expect((await apply(applicant, randomUUID(), { skill_id: skill.id }).expect(404)).body.code).toBe(4040);
    const closed = await newTask();
    await test.http.post(`/api/v1/tasks/${closed.id}/close`).set(publisher.headers).send({}).expect(200);
    expect((await apply(applicant, closed.id, { skill_id: skill.id }).expect(409)).body).toMatchObject({
      code: 4090,
      data: { status: 'closed', action: 'apply' },
    });
    for (const body of [
      {},
      { skill_id: 'nope' },
      { skill_id: skill.id, proposed_price: '-1' },
      { skill_id: skill.id, proposed_billing_model: 'hourly' },
      { skill_id: skill.id, proposed_quantity: 0 },
      { skill_id: skill.id, extra: 1 },
    ]) {
      expect((await apply(applicant, task.id, body).expect(400)).body.code).toBe(4000);
    }
    // Terms that do not say what the publisher would be charged: a unit price alone, or a total
    // that is not the unit price times the quantity named beside it.
    for (const [body, field] of [
      [{ skill_id: skill.id, proposed_unit_price: '5.00' }, 'body.proposed_quantity'],
      [{ skill_id: skill.id, proposed_price: '1.00', proposed_unit_price: '5.00', proposed_quantity: 10 }, 'body.proposed_price'],
    ] as const) {
      const refused = (await apply(applicant, task.id, body).expect(400)).body;
      expect(refused).toMatchObject({ code: 4000, data: { errors: [{ path: field }] } });
    }
    // A rate beside the total it comes to, or beside a total alone, is clear.
    const rated = await newSkill();
    expect(
      (await apply(applicant, task.id, { skill_id: rated.id, proposed_price: '50.00', proposed_unit_price: '5.00', proposed_quantity: 10 }).expect(201)).body
        .data,
    ).toMatchObject({
      proposed_price: '50.00',
    });
    expect((await test.http.post(`/api/v1/tasks/${task.id}/applications`).send({ skill_id: skill.id }).expect(401)).body.code).toBe(4010);
  });

  it('keeps one live application per skill per task (4092 names it), and a withdrawn one frees the skill to apply again', async () => {
    const task = await newTask();
    const skill = await newSkill();
    const first = (await apply(applicant, task.id, { skill_id: skill.id }).expect(201)).body.data;
    expect((await apply(applicant, task.id, { skill_id: skill.id }).expect(409)).body).toMatchObject({ code: 4092, data: { application_id: first.id } });
    await test.http.delete(`/api/v1/tasks/${task.id}/applications/${first.id}`).set(applicant.headers).expect(200);
    expect((await apply(applicant, task.id, { skill_id: skill.id }).expect(201)).body.data.id).not.toBe(first.id);
  });

  it(raceTest('makes one application of ten parallel applies of one skill'), async () => {
    const task = await newTask();
    const skill = await newSkill();
    const answers = await Promise.all(Array.from({ length: 10 }, () => apply(applicant, task.id, { skill_id: skill.id })));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status !== 201).every((answer) => answer.body.code === 4092)).toBe(true);
  });
});

describe('how many applications a task takes', () => {
  it(`takes ${limits.taskPendingApplicationsMax} pending applications, even when the last places are asked for at once, refuses the rest with 4092 saying so, and takes one again once one is answered`, async () => {
    const task = await newTask();
    // One account per place (an account holds at most limits.taskApplicationsPerApplicantMax of a
    // task's): an auto-provisioning key makes a new agent account for each new user id.
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const accountOf = (): Actor => {
      const userId = randomUUID();
      return { userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': userId } };
    };
    const racers = 10;
    const lastPlaces = 2;
    const skills: { id: string; owner: Actor }[] = [];
    for (let batch = 0; batch * 20 < limits.taskPendingApplicationsMax - lastPlaces + racers; batch++) {
      skills.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, async () => {
            const owner = accountOf();
            return { ...(await newSkill(owner)), owner };
          }),
        )),
      );
    }
    const applied: Application[] = [];
    const before = limits.taskPendingApplicationsMax - lastPlaces;
    for (let batch = 0; batch * 20 < before; batch++) {
      const slice = skills.slice(batch * 20, Math.min((batch + 1) * 20, before));
      applied.push(
        ...(await Promise.all(slice.map(async (skill) => (await apply(skill.owner, task.id, { skill_id: skill.id }).expect(201)).body.data as Application))),
      );
    }
    // Ten accounts ask for the last two places at once: two get them, whatever the interleaving.
    const racing = skills.slice(before, before + racers);
    const answers = await Promise.all(racing.map((skill) => apply(skill.owner, task.id, { skill_id: skill.id })));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(lastPlaces);
    const refused = answers.filter((answer) => answer.status !== 201);
    expect(
      refused.every(
        (answer) => answer.status === 409 && answer.body.code === 4092 && answer.body.data.pending_applications_max === limits.taskPendingApplicationsMax,
      ),
    ).toBe(true);
    const pending = await test.http.get(`/api/v1/tasks/${task.id}/applications?status=pending&page_size=1`).set(publisher.headers).expect(200);
    expect(pending.body.data.total).toBe(limits.taskPendingApplicationsMax);
    const extra = racing[answers.findIndex((answer) => answer.status !== 201)]!;
    await test.http.post(`/api/v1/tasks/${task.id}/applications/${applied[0]!.id}/reject`).set(publisher.headers).send({}).expect(200);
    await apply(extra.owner, task.id, { skill_id: extra.id }).expect(201);
  }, 120_000);
});

describe('withdrawing and rejecting', () => {
  it('lets the applicant withdraw and the publisher reject a pending application, nobody else, once', async () => {
    const task = await newTask();
    const [one, two] = [await newSkill(), await newSkill()];
    const first = (await apply(applicant, task.id, { skill_id: one.id }).expect(201)).body.data as Application;
    const second = (await apply(applicant, task.id, { skill_id: two.id }).expect(201)).body.data as Application;
    const withdraw = (actor: Actor, id: string) => test.http.delete(`/api/v1/tasks/${task.id}/applications/${id}`).set(actor.headers);
    const reject = (actor: Actor, id: string) => test.http.post(`/api/v1/tasks/${task.id}/applications/${id}/reject`).set(actor.headers).send({});
    expect((await withdraw(publisher, first.id).expect(403)).body.code).toBe(4030);
    expect((await reject(applicant, first.id).expect(403)).body.code).toBe(4030);
    expect((await withdraw(bystander, first.id).expect(404)).body.code).toBe(4040);
    expect((await reject(human, first.id).expect(404)).body.code).toBe(4040);
    expect((await withdraw(applicant, first.id).expect(200)).body.data).toMatchObject({ status: 'withdrawn' });
    expect((await withdraw(applicant, first.id).expect(409)).body).toMatchObject({ code: 4090, data: { status: 'withdrawn', action: 'withdraw' } });
    expect((await reject(publisher, first.id).expect(409)).body.code).toBe(4090);
    const rejected = (await reject(publisher, second.id).expect(200)).body.data;
    expect(rejected.status).toBe('rejected');
    expect(rejected.decided_at).toEqual(expect.any(String));
    expect((await test.http.delete(`/api/v1/tasks/${randomUUID()}/applications/${second.id}`).set(applicant.headers).expect(404)).body.code).toBe(4040);
    const filtered = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).query({ status: 'rejected' }).expect(200)).body.data;
    expect(filtered.items.map((item: Application) => item.id)).toEqual([second.id]);
  });

  it('ends the pending applications of a task that ends (closed, cancelled, expired): rejected, no longer counted against the applicant, not to be decided', async () => {
    const mine = (actor: Actor, taskId: string) =>
      test.http
        .get('/api/v1/tasks/applications/mine')
        .set(actor.headers)
        .query({ page_size: 100 })
        .expect(200)
        .then((answer) => (answer.body.data.items as Application[]).filter((item) => item.task_id === taskId));
    const worker = await createAgent(test);
    const skill = await newSkill(worker);
    const ends: [string, (taskId: string) => Promise<unknown>][] = [
      ['closed', (taskId) => test.http.post(`/api/v1/tasks/${taskId}/close`).set(publisher.headers).send({}).expect(200)],
      ['cancelled', (taskId) => test.http.post(`/api/v1/admin/tasks/${taskId}/cancel`).set(admin).send({}).expect(200)],
      [
        'expired',
        async (taskId) => {
          await test.runtime.engine.dependencies
            .db('tasks')
            .where({ id: taskId })
            .update({ expires_at: new Date(test.clock.now.getTime() - 1000) });
          await test.runtime.engine.sweeper.runOnce();
        },
      ],
    ];
    // Each end twice: in its one statement, and on the transaction path that a task which keeps
    // changing under the statement's compare-and-set goes to (forced by allowing the statement no attempt).
    const attempts = limits as { compareAndSetAttemptsMax: number };
    const attemptsMax = attempts.compareAndSetAttemptsMax;
    for (const [[status, end], path] of [...ends.map((e) => [e, 'statement'] as const), ...ends.map((e) => [e, 'transaction'] as const)]) {
      const task = await newTask();
      const application = (await apply(worker, task.id, { skill_id: skill.id }).expect(201)).body.data as Application;
      if (path === 'transaction') attempts.compareAndSetAttemptsMax = 0;
      try {
        await end(task.id);
      } finally {
        attempts.compareAndSetAttemptsMax = attemptsMax;
      }
      expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data.status).toBe(status);
      expect(await mine(worker, task.id)).toEqual([expect.objectContaining({ id: application.id, status: 'rejected', decided_at: expect.any(String) })]);
      const reject = await test.http.post(`/api/v1/tasks/${task.id}/applications/${application.id}/reject`).set(publisher.headers).send({});
      expect(reject.status).toBe(409);
    }
    // None of them is pending any more: nothing of the worker's counts against the caps.
    const pending = (await test.http.get('/api/v1/tasks/applications/mine').set(worker.headers).query({ status: 'pending' }).expect(200)).body.data.items;
    expect(pending).toEqual([]);
  });

  it('migration 076 rejects the pending applications that tasks ended before the rule left behind, as of when each task ended', async () => {
    const worker = await createAgent(test);
    const skill = await newSkill(worker);
    const [ended, open] = [await newTask(), await newTask()];
    const stale = (await apply(worker, ended.id, { skill_id: skill.id }).expect(201)).body.data as Application;
    const live = (await apply(worker, open.id, { skill_id: skill.id }).expect(201)).body.data as Application;
    const db = test.runtime.engine.dependencies.db;
    // A task closed by an earlier version: its application was left pending.
    const endedAt = new Date('2026-11-01T10:00:00Z');
    await db('tasks').where({ id: ended.id }).update({ status: 'closed', bounty_held: '0', ended_at: endedAt });
    await endedTaskApplications.up(db);
    const rows = (await db('task_applications').whereIn('id', [stale.id, live.id]).select('id', 'status', 'decided_at')) as {
      id: string;
      status: string;
      decided_at: Date | null;
    }[];
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(stale.id)).toMatchObject({ status: 'rejected', decided_at: endedAt });
    expect(byId.get(live.id)).toMatchObject({ status: 'pending', decided_at: null });
  });

  it("shows a task's applications to its publisher only", async () => {
    const task = await newTask();
    expect((await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(applicant.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(human.headers).expect(404)).body.code).toBe(4040);
  });
});

describe('the application status table', () => {
  const expected: Record<string, string> = { 'pending withdraw': 'withdrawn', 'pending reject': 'rejected', 'pending accept': 'accepted' };
  it.each(applicationStatuses.flatMap((from) => applicationActions.map((action) => [from, action] as const)))(
    '%s + %s moves as docs/tasks.md says, or is 4090',
    (from, action) => {
      const to = expected[`${from} ${action}`];
      if (to) expect(nextApplicationState(from, action)).toBe(to);
      else expect(() => nextApplicationState(from, action)).toThrow(expect.objectContaining({ code: 4090 }));
    },
  );

  it('is the table docs/tasks.md shows', () => {
    const doc = readFileSync(new URL('../../docs/tasks.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Application status'), doc.indexOf('## The hall'));
    const rows = [...section.matchAll(/^\| (\w+) \| (\w+) \| (\w+) \| (\w+) \|$/gm)]
      .filter(([, from]) => from !== 'From')
      .map(([, from, action, to, actor]) => ({ from, action, to, actor }));
    expect(rows).toEqual(applicationTransitionTable);
  });
});
