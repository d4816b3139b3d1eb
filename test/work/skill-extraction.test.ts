import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSkillBody } from '../../src/schemas/skills.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';

const english = readFileSync(new URL('../fixtures/cv-en.txt', import.meta.url), 'utf8');
const chinese = readFileSync(new URL('../fixtures/cv-zh.txt', import.meta.url), 'utf8');

type Candidate = {
  id: string;
  name: string;
  category: string;
  tags: string[];
  evidence: string[];
  description: string;
  confidence: number;
  status: string;
  skill_id: string | null;
  extracted_by: string;
};
type Extraction = { language: string; extracted_by: string; candidates: Candidate[] };

let test: TestApp;
let owner: Actor;
let other: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  owner = await createAgent(test);
  other = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const extract = async (actor: Actor, content: string) =>
  (await test.http.post('/api/v1/skills/extract').set(actor.headers).send({ content }).expect(201)).body.data as Extraction;
const confirm = (actor: Actor, id: string, body: Record<string, unknown> = {}) =>
  test.http.post(`/api/v1/skills/candidates/${id}/confirm`).set(actor.headers).send(body);
const byCategory = (extraction: Extraction) => extraction.candidates.map((candidate) => candidate.category);

describe('POST /api/v1/skills/extract, built in', () => {
  it('finds in an English CV the skills its author would list, each with sentences of the CV as evidence', async () => {
    const found = await extract(owner, english);
    expect(found).toMatchObject({ language: 'en', extracted_by: 'builtin' });
    const names = found.candidates.map((candidate) => candidate.name);
    expect(names).toEqual(
      expect.arrayContaining(['Web front-end development', 'Back-end and API development', 'Translation', 'Data analysis', 'Python programming']),
    );
    expect(byCategory(found)).not.toContain('design');
    for (const candidate of found.candidates) {
      expect(candidate.evidence.length).toBeGreaterThan(0);
      for (const sentence of candidate.evidence) expect(english).toContain(sentence);
      expect(candidate).toMatchObject({ status: 'pending', skill_id: null });
      expect(candidate.confidence).toBeGreaterThan(0);
      expect(candidate.confidence).toBeLessThanOrEqual(1);
    }
    const translation = found.candidates.find((candidate) => candidate.category === 'translation')!;
    expect(translation.evidence.join(' ')).toMatch(/translat/i);
  });

  it('finds in a Chinese résumé the skills a reader would name, in Chinese', async () => {
    const found = await extract(owner, chinese);
    expect(found.language).toBe('zh');
    expect(byCategory(found)).toEqual(expect.arrayContaining(['design', 'illustration', 'video', 'marketing', 'photography']));
    const names = found.candidates.map((candidate) => candidate.name);
    expect(names).toEqual(expect.arrayContaining(['标志与品牌设计', '插画', '视频剪辑', '平面设计']));
    expect(found.candidates.find((candidate) => candidate.category === 'illustration')!.evidence.join('')).toContain('插画');
    expect(byCategory(found)).not.toContain('tech_dev');
  });

  it('still finds the one skill of a one-line service description, and nothing in text about no work', async () => {
    expect((await extract(owner, 'I translate novels from German into English.')).candidates.map((candidate) => candidate.category)).toEqual(['translation']);
    expect((await extract(owner, 'I translate legal contracts from German into English.')).candidates.map((candidate) => candidate.category)).toContain(
      'translation',
    );
    expect((await extract(owner, '我提供上门保洁和家政服务。')).candidates[0]).toMatchObject({ category: 'life_service', name: '家政与生活服务' });
    expect((await extract(owner, 'The weather was lovely on Sunday.')).candidates).toEqual([]);
  });

  it('refuses empty, oversized and malformed bodies with 4000, and callers without credentials', async () => {
    for (const body of [{}, { content: '' }, { content: '   ' }, { content: 'x'.repeat(20_001) }, { content: 42 }, { content: 'ok', extra: 1 }]) {
      expect((await test.http.post('/api/v1/skills/extract').set(owner.headers).send(body).expect(400)).body.code).toBe(4000);
    }
    expect((await test.http.post('/api/v1/skills/extract').send({ content: english }).expect(401)).body.code).toBe(4010);
  });

  it('reads a 20,000-character text (the limit) in one request', async () => {
    const long = `${english}\n`.repeat(20).slice(0, 20_000);
    const found = await extract(owner, long);
    expect(found.candidates.length).toBeGreaterThan(3);
    expect(found.candidates.length).toBeLessThanOrEqual(10);
  });

  it('stores once for one Idempotency-Key', async () => {
    const actor = await createAgent(test);
    const key = randomUUID();
    const first = await test.http.post('/api/v1/skills/extract').set(actor.headers).set('Idempotency-Key', key).send({ content: english }).expect(201);
    const again = await test.http.post('/api/v1/skills/extract').set(actor.headers).set('Idempotency-Key', key).send({ content: english }).expect(201);
    expect(again.body.data.candidates.map((candidate: Candidate) => candidate.id)).toEqual(
      first.body.data.candidates.map((candidate: Candidate) => candidate.id),
    );
    const listed = (await test.http.get('/api/v1/skills/candidates').set(actor.headers).query({ page_size: 100 }).expect(200)).body.data;
    expect(listed.total).toBe(first.body.data.candidates.length);
  });
});

describe('GET /api/v1/skills/candidates and POST .../confirm', () => {
  it("lists the caller's own candidates only, newest first, with a status filter", async () => {
    const actor = await createAgent(test);
    const found = await extract(actor, english);
    await extract(other, chinese);
    const listed = (await test.http.get('/api/v1/skills/candidates').set(actor.headers).query({ page_size: 100 }).expect(200)).body.data;
    expect(listed.items.map((item: Candidate) => item.id).sort()).toEqual(found.candidates.map((candidate) => candidate.id).sort());
    await confirm(actor, found.candidates[0]!.id).expect(201);
    const pending = (await test.http.get('/api/v1/skills/candidates').set(actor.headers).query({ status: 'pending', page_size: 100 }).expect(200)).body.data;
    expect(pending.total).toBe(found.candidates.length - 1);
    const confirmed = (await test.http.get('/api/v1/skills/candidates').set(actor.headers).query({ status: 'confirmed' }).expect(200)).body.data;
    expect(confirmed.items).toHaveLength(1);
    expect(confirmed.items[0].skill_id).toEqual(expect.any(String));
    const humanList = (await test.http.get('/api/v1/skills/candidates').set(human.headers).expect(200)).body.data;
    expect(humanList.total).toBe(0);
  });

  it('turns a candidate into a skill with the edits given, source extracted, visible in the hall', async () => {
    const found = await extract(owner, 'I translate legal contracts from German into English.');
    const translation = found.candidates.find((candidate) => candidate.category === 'translation')!;
    const skill = (await confirm(owner, translation.id, { name: 'Legal translation DE-EN', ut_price: '30.00', pricing_model: 'per_hour' }).expect(201)).body
      .data;
    expect(skill).toMatchObject({
      name: 'Legal translation DE-EN',
      category: 'translation',
      source: 'extracted',
      ut_price: '30.00',
      pricing_model: 'per_hour',
      status: 'active',
      user_id: owner.userId,
    });
    const hall = (await test.http.get('/api/v1/skills/hall').set(other.headers).query({ q: 'legal translation' }).expect(200)).body.data;
    expect(hall.items.map((item: { id: string }) => item.id)).toContain(skill.id);
  });

  it('confirms once: a second confirmation is 4090 with the skill id', async () => {
    const found = await extract(owner, english);
    const first = (await confirm(owner, found.candidates[0]!.id).expect(201)).body.data;
    const second = await confirm(owner, found.candidates[0]!.id).expect(409);
    expect(second.body).toMatchObject({ code: 4090, data: { skill_id: first.id, status: 'confirmed' } });
  });

  it(raceTest('confirms once under twenty parallel confirmations: one skill, the rest 4090'), async () => {
    const found = await extract(owner, chinese);
    const id = found.candidates[1]!.id;
    const answers = await Promise.all(Array.from({ length: 20 }, () => confirm(owner, id)));
    expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 409).every((answer) => answer.body.code === 4090)).toBe(true);
    const skills = await test.runtime.engine.dependencies.db('skills').where({ candidate_id: id }).count('* as count');
    expect(Number((skills[0] as { count: string }).count)).toBe(1);
  });

  it('hides a candidate from everyone but its owner in its space (4040), and refuses edits that break the rules', async () => {
    const found = await extract(owner, english);
    const id = found.candidates[0]!.id;
    expect((await confirm(other, id).expect(404)).body.code).toBe(4040);
    expect((await confirm(human, id).expect(404)).body.code).toBe(4040);
    expect((await confirm(owner, randomUUID()).expect(404)).body.code).toBe(4040);
    expect((await test.http.post('/api/v1/skills/candidates/nope/confirm').set(owner.headers).send({}).expect(400)).body.code).toBe(4000);
    for (const edits of [
      { mode: 'offline' },
      { category: 'cooking' },
      { ut_price: '-2' },
      { name: '' },
      { images: ['http://x.example/a.png'] },
      { source: 'manual' },
    ]) {
      expect((await confirm(owner, id, edits).expect(400)).body.code).toBe(4000);
    }
    expect((await confirm(owner, id).expect(201)).body.data.source).toBe('extracted');
  });
});

describe('POST /api/v1/skills/extract with a language model', () => {
  let fake: FakeLlm;
  let ai: TestApp;
  let actor: Actor;

  beforeAll(async () => {
    fake = await startFakeLlm();
    ai = await startTestApp({ LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model' });
    actor = await createAgent(ai);
  });
  afterAll(async () => {
    await ai.close();
    await fake.close();
  });
  const extractWith = async (content: string) =>
    (await ai.http.post('/api/v1/skills/extract').set(actor.headers).send({ content }).expect(201)).body.data as Extraction;

  it("stores the model's skills when its answer is valid and quotes the text", async () => {
    fake.reply = JSON.stringify({
      skills: [
        {
          name: 'Technical translation',
          description: 'Manuals and interfaces, EN-ES',
          category: 'translation',
          tags: ['spanish'],
          evidence: ['I translate software manuals, user interfaces and marketing pages from English into Spanish and from Spanish into English'],
        },
      ],
    });
    const found = await extractWith(english);
    expect(found).toMatchObject({ extracted_by: 'ai', candidates: [{ name: 'Technical translation', category: 'translation', extracted_by: 'ai' }] });
    expect(
      createSkillBody.safeParse({ name: found.candidates[0]!.name, description: found.candidates[0]!.description, category: found.candidates[0]!.category })
        .success,
    ).toBe(true);
  });

  it('falls back to the built-in extraction when the answer is not the JSON asked for, or quotes what the text does not say', async () => {
    fake.reply = 'Sure! Here are the skills: translation, React.';
    expect((await extractWith(english)).extracted_by).toBe('builtin');
    fake.reply = JSON.stringify({
      skills: [{ name: 'Brain surgery', description: 'x', category: 'health', tags: [], evidence: ['I perform brain surgery.'] }],
    });
    const found = await extractWith(english);
    expect(found.extracted_by).toBe('builtin');
    expect(found.candidates.map((candidate) => candidate.name)).not.toContain('Brain surgery');
    fake.reply = JSON.stringify({ skills: [{ name: 'Cooking', description: 'x', category: 'cooking', tags: [], evidence: ['Python'] }] });
    expect((await extractWith(english)).extracted_by).toBe('builtin');
  });
});
