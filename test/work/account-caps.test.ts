import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * Issue 28 point 7: one account cannot fill a task's application slots. Skills per user and
 * space, live applications per applicant and task, and live applications per applicant overall
 * are capped (src/limits.ts), each refusal a 4092 naming its limit, on REST and MCP alike, and
 * the caps hold when one account sends its requests all at once.
 */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let publisher: Actor;
let cheapAgent: () => Actor;
const clients: Client[] = [];

beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
  publisher = await createAgent(test);
  // An auto-provisioning platform key: each new X-Platform-User-Id is a new agent account, cheaply.
  const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
  cheapAgent = () => {
    const userId = randomUUID();
    return { userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': userId } };
  };
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.close();
  await test?.close();
});

async function mcpOf(actor: Actor) {
  const client = await connectMcp(server.url, actor.headers);
  clients.push(client);
  return client;
}
const skillBody = (index = 0) => ({ name: `Proofreading ${index}`, description: 'Academic English', category: 'academic' });
const createSkill = (owner: Actor, index = 0) => test.http.post('/api/v1/skills/').set(owner.headers).send(skillBody(index));
const newSkills = async (owner: Actor, count: number) =>
  Promise.all(Array.from({ length: count }, async (_, index) => (await createSkill(owner, index).expect(201)).body.data as { id: string }));
const newTask = async () =>
  (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ title: 'Proofread a thesis', description: 'Eighty pages of English', mode: 'online', category: 'academic' })
      .expect(201)
  ).body.data as { id: string };
const apply = (actor: Actor, taskId: string, skillId: string) =>
  test.http.post(`/api/v1/tasks/${taskId}/applications`).set(actor.headers).send({ skill_id: skillId });

describe('skills per user and space', () => {
  it(`keeps ${limits.skillsPerUserMax} live skills per account and space (4092 naming the limit, on REST and MCP), a deleted one frees a place, the other space has its own`, async () => {
    const person = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, person.userId);
    const owner: Actor = { userId: person.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': person.userId } };
    const skills = await newSkills(owner, limits.skillsPerUserMax);
    const refused = await createSkill(owner).expect(409);
    expect(refused.body).toMatchObject({
      code: 4092,
      data: { skills_max: limits.skillsPerUserMax, detail: expect.stringContaining(String(limits.skillsPerUserMax)) },
    });
    const viaMcp = await callTool(await mcpOf(owner), 'create_skill', skillBody());
    expect({ isError: viaMcp.isError, code: viaMcp.data.code, max: viaMcp.data.data?.skills_max }).toEqual({
      isError: true,
      code: 4092,
      max: limits.skillsPerUserMax,
    });
    // The same person in the human space (their own token) is another space with its own count.
    await createSkill(person).expect(201);
    await test.http.delete(`/api/v1/skills/${skills[0]!.id}`).set(owner.headers).expect(200);
    await createSkill(owner).expect(201);
    await createSkill(owner).expect(409);
  }, 60_000);

  it(
    raceTest(`creates exactly ${limits.skillsPerUserMax} skills of ${limits.skillsPerUserMax + 15} parallel creates by one account`),
    async () => {
      const owner = cheapAgent();
      const answers = await Promise.all(Array.from({ length: limits.skillsPerUserMax + 15 }, (_, index) => createSkill(owner, index)));
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(limits.skillsPerUserMax);
      expect(answers.filter((answer) => answer.status !== 201).map((answer) => answer.body.code)).toEqual(Array.from({ length: 15 }, () => 4092));
      expect((await test.http.get('/api/v1/skills/').set(owner.headers).expect(200)).body.data.total).toBe(limits.skillsPerUserMax);
    },
    60_000,
  );
});

describe('live applications per applicant and task', () => {
  it(`lets one account hold ${limits.taskApplicationsPerApplicantMax} live applications of a task, whatever its skills, and a real applicant still applies`, async () => {
    const task = await newTask();
    const flooder = cheapAgent();
    const skills = await newSkills(flooder, 10);
    const answers = [];
    for (const skill of skills) answers.push(await apply(flooder, task.id, skill.id));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(limits.taskApplicationsPerApplicantMax);
    const refusal = answers.find((answer) => answer.status !== 201)!;
    expect(refusal.status).toBe(409);
    expect(refusal.body).toMatchObject({ code: 4092, data: { applications_per_task_max: limits.taskApplicationsPerApplicantMax, detail: expect.any(String) } });
    const viaMcp = await callTool(await mcpOf(flooder), 'apply_to_task', { task_id: task.id, skill_id: skills.at(-1)!.id });
    expect({ isError: viaMcp.isError, code: viaMcp.data.code, max: viaMcp.data.data?.applications_per_task_max }).toEqual({
      isError: true,
      code: 4092,
      max: limits.taskApplicationsPerApplicantMax,
    });
    const real = await createAgent(test);
    const [realSkill] = await newSkills(real, 1);
    await apply(real, task.id, realSkill!.id).expect(201);
    // Withdrawing one of the flooder's applications frees its place for another of its skills.
    const first = answers.find((answer) => answer.status === 201)!.body.data as { id: string };
    await test.http.delete(`/api/v1/tasks/${task.id}/applications/${first.id}`).set(flooder.headers).expect(200);
    await apply(flooder, task.id, skills.at(-1)!.id).expect(201);
    const listed = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).query({ status: 'pending' }).expect(200)).body.data;
    expect(listed.items.filter((item: { applicant_id: string }) => item.applicant_id === flooder.userId)).toHaveLength(limits.taskApplicationsPerApplicantMax);
  }, 60_000);

  it(
    raceTest(`takes ${limits.taskApplicationsPerApplicantMax} of twenty parallel applies by one account to one task`),
    async () => {
      const task = await newTask();
      const flooder = cheapAgent();
      const skills = await newSkills(flooder, 20);
      const answers = await Promise.all(skills.map((skill) => apply(flooder, task.id, skill.id)));
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(limits.taskApplicationsPerApplicantMax);
      expect(new Set(answers.filter((answer) => answer.status !== 201).map((answer) => answer.body.code))).toEqual(new Set([4092]));
      const real = cheapAgent();
      const [realSkill] = await newSkills(real, 1);
      await apply(real, task.id, realSkill!.id).expect(201);
    },
    60_000,
  );
});

describe('live applications per applicant overall', () => {
  it(
    raceTest(`keeps ${limits.liveApplicationsPerApplicantMax} pending applications per account and space across tasks, even when sent at once`),
    async () => {
      const flooder = cheapAgent();
      const [skill] = await newSkills(flooder, 1);
      const tasks: { id: string }[] = [];
      for (let batch = 0; batch * 10 < limits.liveApplicationsPerApplicantMax + 10; batch++)
        tasks.push(...(await Promise.all(Array.from({ length: 10 }, () => newTask()))));
      const answers = await Promise.all(tasks.map((task) => apply(flooder, task.id, skill!.id)));
      const taken = answers.filter((answer) => answer.status === 201);
      expect(taken).toHaveLength(limits.liveApplicationsPerApplicantMax);
      const refused = answers.filter((answer) => answer.status !== 201);
      expect(refused).toHaveLength(tasks.length - limits.liveApplicationsPerApplicantMax);
      expect(refused[0]!.body).toMatchObject({
        code: 4092,
        data: { live_applications_max: limits.liveApplicationsPerApplicantMax, detail: expect.any(String) },
      });
      // Once the publisher answers one, the account may apply once more.
      const answered = taken[0]!.body.data as { id: string; task_id: string };
      await test.http.post(`/api/v1/tasks/${answered.task_id}/applications/${answered.id}/reject`).set(publisher.headers).send({}).expect(200);
      const freeTask = tasks.find((task) => !taken.some((answer) => answer.body.data.task_id === task.id))!;
      await apply(flooder, freeTask.id, skill!.id).expect(201);
      await apply(
        flooder,
        tasks.find((task) => task.id !== freeTask.id && !taken.some((answer) => answer.body.data.task_id === task.id))!.id,
        skill!.id,
      ).expect(409);
    },
    120_000,
  );
});
