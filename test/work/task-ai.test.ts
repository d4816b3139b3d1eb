import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTaskBody } from '../../src/schemas/tasks.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';
import { credit } from '../helpers/market.ts';
import { listen } from '../helpers/server.ts';
import { type Frame, readEvents } from '../helpers/post-stream.ts';

function setUp(environment: Record<string, string> = {}) {
  const state = {} as { test: TestApp; server: Awaited<ReturnType<typeof listen>>; agent: Actor; human: Actor };
  beforeAll(async () => {
    state.test = await startTestApp(environment);
    state.server = await listen(state.test);
    state.agent = await createAgent(state.test);
    state.human = await signUpHuman(state.test);
  });
  afterAll(async () => {
    await state.server.close();
    await state.test.close();
  });
  const post = (actor: Actor, body: unknown, signal?: AbortSignal) =>
    fetch(`${state.server.url}/api/v1/tasks/ai-create`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...actor.headers },
      body: JSON.stringify(body),
      signal,
    });
  const frames = async (actor: Actor, body: unknown) => {
    const all: Frame[] = [];
    for await (const frame of readEvents(await post(actor, body))) all.push(frame);
    return all;
  };
  return { state, post, frames };
}

describe('POST /api/v1/tasks/ai-create, built in', () => {
  const { state, frames } = setUp();

  it('streams the fields of a task, then a draft that publishing accepts as it is', async () => {
    const all = await frames(state.agent, { prompt: 'Translate my 10-page supply contract into Chinese within 3 days, 50 UT.' });
    expect(all.map((frame) => frame.id)).toEqual(all.map((_, index) => String(index + 1)));
    expect(all.filter((frame) => frame.event === 'field').map((frame) => frame.data.field)).toEqual([
      'title',
      'mode',
      'category',
      'tags',
      'description',
      'delivery_hours',
      'preferred_billing_model',
      'bounty_amount',
    ]);
    const last = all.at(-1)!;
    expect(last.event).toBe('draft');
    const draft = last.data.draft as Record<string, unknown>;
    expect(draft).toMatchObject({
      title: 'Translate my 10-page supply contract into Chinese within 3 days',
      category: 'translation',
      mode: 'online',
      delivery_hours: 72,
      bounty_amount: '50.00',
    });
    expect(createTaskBody.safeParse(draft).success).toBe(true);
    await credit(state.test, state.agent.userId, '60.00');
    const published = await state.test.http.post('/api/v1/tasks/').set(state.agent.headers).send(draft).expect(201);
    expect(published.body.data).toMatchObject({ status: 'open', bounty_held: '50.00' });
  });

  it("drafts in Chinese with the caller's mode and city", async () => {
    const draft = (await frames(state.human, { prompt: '上门维修空调，两天内完成', mode: 'offline', city: '杭州' })).at(-1)!.data.draft as Record<
      string,
      unknown
    >;
    expect(draft).toMatchObject({ mode: 'offline', city: '杭州', delivery_hours: 48, category: 'repair' });
    expect(String(draft.description)).toContain('验收');
  });

  it('refuses bad bodies with 4000 before any stream, and callers without credentials', async () => {
    for (const body of [{}, { prompt: '' }, { prompt: 'x'.repeat(2001) }, { prompt: 'x', mode: 'offline' }, { prompt: 'x', category: 'cooking' }]) {
      expect((await state.test.http.post('/api/v1/tasks/ai-create').set(state.agent.headers).send(body).expect(400)).body.code).toBe(4000);
    }
    expect((await state.test.http.post('/api/v1/tasks/ai-create').send({ prompt: 'x' }).expect(401)).body.code).toBe(4010);
  });
});

describe('POST /api/v1/tasks/description-optimize', () => {
  const { state } = setUp();
  const optimize = (body: Record<string, unknown>) => state.test.http.post('/api/v1/tasks/description-optimize').set(state.agent.headers).send(body);

  it('adds a labelled blank for each missing part, lists the changes, and invents nothing', async () => {
    const result = (await optimize({ description: 'Need   a logo   for my bakery.' }).expect(200)).body.data;
    expect(result).toMatchObject({ language: 'en', optimized_by: 'builtin' });
    expect(result.optimized_description).toMatch(/^Need a logo for my bakery\./);
    expect(result.optimized_description).toContain('Deadline: [when you need it: a date or a number of days]');
    expect(result.optimized_description).toContain('Budget: [amount or range]');
    expect(result.changes).toEqual(
      expect.arrayContaining(['tidied extra spaces and blank lines', 'added a line for the deadline', 'added a line for the budget']),
    );
    expect(result.optimized_description).not.toMatch(/\d+ days|\$\d/);
    // Run again on its own answer: the blanks are already there, so nothing is added twice.
    const again = (await optimize({ description: result.optimized_description }).expect(200)).body.data;
    expect(again.optimized_description).toBe(result.optimized_description);
    expect(again.changes).toEqual([]);
  });

  it('works in Chinese, and leaves a complete description as it is', async () => {
    const chinese = (await optimize({ description: '帮我设计一个面包店的标志' }).expect(200)).body.data;
    expect(chinese.language).toBe('zh');
    expect(chinese.optimized_description).toContain('截止时间：');
    const complete =
      'Deliver 3 logo concepts for my bakery as SVG and PNG files within 5 days. Budget $200. Acceptance: I pick one concept and approve the final file.';
    const kept = (await optimize({ description: complete }).expect(200)).body.data;
    expect(kept.optimized_description.startsWith(complete)).toBe(true);
  });

  it('refuses bad bodies with 4000', async () => {
    for (const body of [{}, { description: '' }, { description: 'x'.repeat(10_001) }, { description: 'ok', extra: 1 }])
      expect((await optimize(body).expect(400)).body.code).toBe(4000);
  });
});

describe('task AI help with a language model', () => {
  let fake: FakeLlm;
  const environment: Record<string, string> = {};
  beforeAll(async () => {
    fake = await startFakeLlm();
    Object.assign(environment, { LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model' });
  });
  afterAll(() => fake.close());
  const { state, post, frames } = setUp(environment);

  it("relays the model's tokens and ends with its draft; a client leaving aborts the model's request", async () => {
    const draft = {
      title: 'Translate a contract',
      description: 'Ten pages into Chinese',
      category: 'translation',
      tags: ['legal'],
      delivery_hours: 48,
      preferred_billing_model: 'fixed',
    };
    fake.streamDeltas = [JSON.stringify(draft).slice(0, 20), JSON.stringify(draft).slice(20)];
    const all = await frames(state.agent, { prompt: 'Translate my contract' });
    expect(all.filter((frame) => frame.event === 'delta').map((frame) => frame.data.text)).toEqual(fake.streamDeltas);
    expect(all.at(-1)).toMatchObject({ event: 'draft', data: { generated_by: 'ai', draft: { ...draft, mode: 'online' } } });
    fake.hangAfterDeltas = 1;
    const before = fake.closedEarly;
    const abort = new AbortController();
    for await (const frame of readEvents(await post(state.agent, { prompt: 'Translate' }, abort.signal))) if (frame.event === 'delta') break;
    abort.abort();
    await expect.poll(() => fake.closedEarly, { timeout: 5_000 }).toBe(before + 1);
    fake.hangAfterDeltas = null;
  });

  it("answers the model's optimisation when it is valid, and the built-in one when it is not", async () => {
    fake.reply = JSON.stringify({ optimized_description: 'Design a bakery logo: 3 concepts, SVG.', changes: ['named the deliverable'] });
    const used = (await state.test.http.post('/api/v1/tasks/description-optimize').set(state.agent.headers).send({ description: 'logo pls' }).expect(200)).body
      .data;
    expect(used).toMatchObject({ optimized_by: 'ai', optimized_description: 'Design a bakery logo: 3 concepts, SVG.', changes: ['named the deliverable'] });
    fake.reply = 'Sure, here is a better one: ...';
    expect(
      (await state.test.http.post('/api/v1/tasks/description-optimize').set(state.agent.headers).send({ description: 'logo pls' }).expect(200)).body.data
        .optimized_by,
    ).toBe('builtin');
  });
});
