import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSkillBody } from '../../src/schemas/skills.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';
import { listen } from '../helpers/server.ts';
import { type Frame, readEvents } from '../helpers/post-stream.ts';

const skillCount = async (test: TestApp) =>
  Number(((await test.runtime.engine.dependencies.db('skills').count('* as count')) as { count: string }[])[0]!.count);

function streamer(getUrl: () => string) {
  const post = (actor: Actor, body: unknown, signal?: AbortSignal) =>
    fetch(`${getUrl()}/api/v1/skills/ai-create`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...actor.headers },
      body: JSON.stringify(body),
      signal,
    });
  const all = async (actor: Actor, body: unknown) => {
    const response = await post(actor, body);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames: Frame[] = [];
    for await (const frame of readEvents(response)) frames.push(frame);
    return frames;
  };
  return { post, all };
}

describe('POST /api/v1/skills/ai-create, built-in drafter', () => {
  let test: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  let agent: Actor;
  let human: Actor;
  const client = streamer(() => server.url);

  beforeAll(async () => {
    test = await startTestApp();
    server = await listen(test);
    agent = await createAgent(test);
    human = await signUpHuman(test);
  });
  afterAll(async () => {
    await server.close();
    await test.close();
  });

  it('streams progress, then each field, then a draft the create schema accepts; nothing is stored until it is posted', async () => {
    const before = await skillCount(test);
    const frames = await client.all(agent, { prompt: 'I design logos for cafés and bakeries, 80 UT per logo with two revisions.' });
    expect(frames.map((frame) => frame.id)).toEqual(frames.map((_, index) => String(index + 1)));
    expect(frames.slice(0, 2).map((frame) => frame.data.stage)).toEqual(['started', 'drafting']);
    const fields = frames.filter((frame) => frame.event === 'field').map((frame) => frame.data.field);
    expect(fields).toEqual(['name', 'category', 'mode', 'tags', 'description', 'pricing_model', 'ut_price']);
    const last = frames.at(-1)!;
    expect(last.event).toBe('draft');
    const draft = last.data.draft as Record<string, unknown>;
    expect(draft).toMatchObject({ name: 'Logo and brand identity design', category: 'design', mode: 'online', ut_price: '80.00', pricing_model: 'fixed' });
    expect(createSkillBody.safeParse(draft).success).toBe(true);
    expect(await skillCount(test)).toBe(before);
    const posted = await test.http.post('/api/v1/skills/').set(agent.headers).send(draft).expect(201);
    expect(posted.body.data).toMatchObject({ name: draft.name, category: 'design', ut_price: '80.00' });
  });

  it("drafts in Chinese from a Chinese prompt, with the caller's own category, mode and city", async () => {
    const frames = await client.all(human, { prompt: '上门家电维修，空调和洗衣机，每小时100元', mode: 'offline', city: '杭州', category: 'repair' });
    const draft = frames.at(-1)!.data.draft as Record<string, unknown>;
    expect(draft).toMatchObject({ category: 'repair', mode: 'offline', city: '杭州', pricing_model: 'per_hour', ut_price: '100.00' });
    expect(String(draft.description)).toContain('交付内容');
    expect(createSkillBody.safeParse(draft).success).toBe(true);
  });

  it('refuses bad bodies with a 4000 envelope before any stream opens, and callers without credentials', async () => {
    for (const body of [
      {},
      { prompt: '' },
      { prompt: 'x'.repeat(2001) },
      { prompt: 'ok', mode: 'offline' },
      { prompt: 'ok', category: 'cooking' },
      { prompt: 'ok', stream: true },
    ]) {
      const response = await test.http.post('/api/v1/skills/ai-create').set(agent.headers).send(body).expect(400);
      expect(response.body.code).toBe(4000);
    }
    expect((await test.http.post('/api/v1/skills/ai-create').send({ prompt: 'ok' }).expect(401)).body.code).toBe(4010);
  });
});

describe('POST /api/v1/skills/ai-create with a language model', () => {
  let fake: FakeLlm;
  let test: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  let agent: Actor;
  const logLines: string[] = [];
  const client = streamer(() => server.url);
  const modelDraft = {
    name: 'Bakery logos',
    description: 'Three logo ideas for a bakery, vector files.',
    category: 'design',
    tags: ['logo'],
    pricing_model: 'fixed',
    ut_price: '80.00',
  };
  const pieces = (text: string, size: number) =>
    Array.from({ length: Math.ceil(text.length / size) }, (_, index) => text.slice(index * size, (index + 1) * size));

  beforeAll(async () => {
    fake = await startFakeLlm();
    test = await startTestApp({ LLM_BASE_URL: fake.url, LLM_MODEL: 'fake-model' }, { logLines });
    server = await listen(test);
    agent = await createAgent(test);
  });
  afterAll(async () => {
    await server.close();
    await test.close();
    await fake.close();
  });

  it("relays the model's tokens as delta events as they arrive, then its draft", async () => {
    const text = JSON.stringify(modelDraft);
    fake.streamDeltas = pieces(text, 12);
    const frames = await client.all(agent, { prompt: 'Logos for bakeries' });
    const deltas = frames.filter((frame) => frame.event === 'delta').map((frame) => frame.data.text);
    expect(deltas).toEqual(fake.streamDeltas);
    expect(frames.at(-1)).toMatchObject({ event: 'draft', data: { generated_by: 'ai', draft: { ...modelDraft, mode: 'online' } } });
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: true, model: 'fake-model' });
  });

  it('a client that disconnects mid-stream aborts the model request, and its stream place is given back', async () => {
    fake.streamDeltas = pieces(JSON.stringify(modelDraft), 10);
    fake.hangAfterDeltas = 2;
    const closedBefore = fake.closedEarly;
    const abort = new AbortController();
    const response = await client.post(agent, { prompt: 'Logos for bakeries' }, abort.signal);
    for await (const frame of readEvents(response)) if (frame.event === 'delta') break;
    abort.abort();
    await expect.poll(() => fake.closedEarly, { timeout: 5_000 }).toBe(closedBefore + 1);
    // A client leaving is no failure: nothing is logged as an error, and no 5000 is answered or logged.
    // The code and the status as fields: a bare "5000" also turns up inside a random request id.
    expect(logLines.filter((line) => /"level":"error"|internal_error|"code":5000\b|"status":5\d\d\b/.test(line))).toEqual([]);
    fake.hangAfterDeltas = null;
    // Every place of the credential's stream cap is free again: as many streams as the cap open at once.
    fake.streamDeltas = [JSON.stringify(modelDraft)];
    const answers = await Promise.all(Array.from({ length: limits.sseStreamsPerCredentialMax }, () => client.all(agent, { prompt: 'Logos' })));
    expect(answers.every((frames) => frames.at(-1)!.event === 'draft')).toBe(true);
  });

  it('caps the open streams per credential: one over the cap is refused with 4290 before it opens', async () => {
    fake.streamDeltas = ['{"name":'];
    fake.hangAfterDeltas = 1;
    const abort = new AbortController();
    const open = await Promise.all(Array.from({ length: limits.sseStreamsPerCredentialMax }, () => client.post(agent, { prompt: 'Logos' }, abort.signal)));
    expect(open.every((response) => response.status === 200)).toBe(true);
    const refused = await client.post(agent, { prompt: 'Logos' });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { code: number }).code).toBe(4290);
    abort.abort();
    fake.hangAfterDeltas = null;
    await expect
      .poll(async () => await client.post(agent, { prompt: 'x' }).then(async (response) => (await response.body?.cancel(), response.status)), {
        timeout: 5_000,
      })
      .toBe(200);
  });

  it('ends with a clean error event, and stores nothing, when the model fails mid-stream', async () => {
    const before = await skillCount(test);
    fake.streamDeltas = pieces(JSON.stringify(modelDraft), 10);
    fake.dropAfterDeltas = 3;
    const frames = await client.all(agent, { prompt: 'Logos for bakeries' });
    fake.dropAfterDeltas = null;
    expect(frames.filter((frame) => frame.event === 'delta')).toHaveLength(3);
    expect(frames.at(-1)).toMatchObject({ event: 'error', data: { code: 5020, message: 'callback_failed' } });
    expect(frames.some((frame) => frame.event === 'draft')).toBe(false);
    expect(await skillCount(test)).toBe(before);
  });
});
