import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';

/**
 * POST /api/v1/demands/{demand_id}/evaluate-clarity: the clarity analyser applied to a stored
 * demand, readable by whoever may read the demand's details (its requester always, others of its
 * space while it is open), with the built-in analyser or, when configured, the model.
 */
const vague = { en: 'Need something for my website, maybe some stuff.', zh: '帮我弄一下网站，随便做点东西。' };
const precise = {
  en:
    'Build a 5-page landing page for our dental clinic with a booking form. Deliver the HTML and CSS source files and a Figma mockup. ' +
    'Must pass Lighthouse accessibility at least 90 and work on mobile. Budget 800 CNY, deadline within 7 days. The site is for new patients who search on their phones.',
  zh: '为我们的牙科诊所开发一个5页的落地页网站，包含在线预约表单。交付HTML源文件和Figma设计稿，格式为PDF说明文档。要求移动端兼容，验收标准：Lighthouse无障碍评分至少90。预算800元，7天内交付。主要面向通过手机搜索的新患者。',
};
const hasHan = (text: string) => /\p{Script=Han}/u.test(text);
const evaluate = (test: TestApp, caller: Actor | null, id: string) => {
  const request = test.http.post(`/api/v1/demands/${id}/evaluate-clarity`);
  return caller ? request.set(caller.headers) : request;
};

describe('evaluate-clarity with the built-in analyser', () => {
  let test: TestApp;
  let requester: Actor;
  let neighbour: Actor;
  let human: Actor;

  beforeAll(async () => {
    test = await startTestApp();
    requester = await createAgent(test);
    neighbour = await createAgent(test);
    human = await signUpHuman(test);
  });
  afterAll(() => test.close());

  it.each(['en', 'zh'] as const)('scores a precise %s demand above a vague one, answering in its language', async (language) => {
    const low = await createDemand(test, requester, { description: vague[language] });
    const high = await createDemand(test, requester, { description: precise[language] });
    const lowAnswer = (await evaluate(test, requester, low.id).expect(200)).body.data;
    const highAnswer = (await evaluate(test, requester, high.id).send({}).expect(200)).body.data;
    expect(lowAnswer).toMatchObject({ demand_id: low.id, language, basis: 'built_in' });
    expect(highAnswer).toMatchObject({ demand_id: high.id, language, basis: 'built_in' });
    expect(highAnswer.score).toBeGreaterThan(lowAnswer.score + 0.5);
    expect(lowAnswer.suggestions.length).toBeGreaterThan(highAnswer.suggestions.length);
    const words = [...lowAnswer.reasons, ...lowAnswer.suggestions];
    expect(words.length).toBeGreaterThan(0);
    expect(words.every((text: string) => hasHan(text) === (language === 'zh'))).toBe(true);
  });

  it('reads the title with the description', async () => {
    const untitled = await createDemand(test, requester, { description: vague.en });
    const titled = await createDemand(test, requester, { description: vague.en, title: 'Landing page with booking form, deadline within 7 days' });
    const withoutTitle = (await evaluate(test, requester, untitled.id).expect(200)).body.data;
    const withTitle = (await evaluate(test, requester, titled.id).expect(200)).body.data;
    expect(withTitle.score).toBeGreaterThan(withoutTitle.score);
    expect(withTitle.reasons).not.toContain('It sets no deadline.');
    expect(withoutTitle.reasons).toContain('It sets no deadline.');
  });

  it('answers another user of the space while the demand is open, and 4040 once it is cancelled (its requester still reads it)', async () => {
    const demand = await createDemand(test, requester, { description: precise.en });
    expect((await evaluate(test, neighbour, demand.id).expect(200)).body.data.demand_id).toBe(demand.id);
    await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(requester.headers).expect(200);
    expect((await evaluate(test, neighbour, demand.id).expect(404)).body.code).toBe(4040);
    expect((await evaluate(test, requester, demand.id).expect(200)).body.data.demand_id).toBe(demand.id);
  });

  it('hides a demand of the other space and an unknown demand (4040)', async () => {
    const agentDemand = await createDemand(test, requester, { description: precise.en });
    const humanDemand = await createDemand(test, human, { description: precise.zh });
    expect((await evaluate(test, human, agentDemand.id).expect(404)).body.code).toBe(4040);
    expect((await evaluate(test, requester, humanDemand.id).expect(404)).body.code).toBe(4040);
    expect((await evaluate(test, human, humanDemand.id).expect(200)).body.data.language).toBe('zh');
    expect((await evaluate(test, requester, randomUUID()).expect(404)).body.code).toBe(4040);
  });

  it('refuses a demand id that is not a uuid and a body with fields (4000)', async () => {
    expect((await evaluate(test, requester, 'not-a-uuid').expect(400)).body.code).toBe(4000);
    const demand = await createDemand(test, requester, { description: vague.en });
    expect((await evaluate(test, requester, demand.id).send({ idempotency_key: 'k' }).expect(400)).body.code).toBe(4000);
  });

  it('refuses callers without credentials (4010) and with mixed credentials (4011)', async () => {
    const demand = await createDemand(test, requester, { description: vague.en });
    expect((await evaluate(test, null, demand.id).expect(401)).body.code).toBe(4010);
    const mixed = await test.http
      .post(`/api/v1/demands/${demand.id}/evaluate-clarity`)
      .set({ ...requester.headers, ...human.headers })
      .expect(400);
    expect(mixed.body.code).toBe(4011);
  });
});

describe('evaluate-clarity with a configured model', () => {
  let fake: FakeLlm;
  let test: TestApp;
  let requester: Actor;

  beforeAll(async () => {
    fake = await startFakeLlm();
    test = await startTestApp({ LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model', LLM_API_KEY: 'secret' });
    requester = await signUpHuman(test);
  });
  afterAll(async () => {
    await test.close();
    await fake.close();
  });

  it("answers with the model's assessment (basis llm), asked with the demand's title and description", async () => {
    fake.reply = '{"score": 0.35, "reasons": ["没有截止时间"], "suggestions": ["写明交付日期"]}';
    const demand = await createDemand(test, requester, { title: '网站需求', description: vague.zh });
    const answer = (await evaluate(test, requester, demand.id).expect(200)).body.data;
    expect(answer).toEqual({ demand_id: demand.id, score: 0.35, language: 'zh', reasons: ['没有截止时间'], suggestions: ['写明交付日期'], basis: 'llm' });
    const asked = fake.requests.at(-1)!;
    expect(asked.path).toBe('/v1/chat/completions');
    expect(asked.headers.authorization).toBe('Bearer secret');
    expect(JSON.stringify(asked.body.messages)).toContain('网站需求');
    expect(JSON.stringify(asked.body.messages)).toContain('随便做点东西');
  });

  it('falls back to the built-in analyser when the answer is in the wrong language', async () => {
    fake.reply = '{"score": 0.9, "reasons": ["Clear enough"], "suggestions": []}';
    const demand = await createDemand(test, requester, { description: vague.zh });
    const answer = (await evaluate(test, requester, demand.id).expect(200)).body.data;
    expect(answer).toMatchObject({ demand_id: demand.id, language: 'zh', basis: 'built_in' });
    expect(answer.score).toBeLessThan(0.3);
  });
});
