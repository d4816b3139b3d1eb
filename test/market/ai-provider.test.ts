import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type AiProviderOptions, createAiProvider } from '../../src/ai/provider.ts';
import { createLogger } from '../../src/logger.ts';
import { type FakeLlm, fakeEmbedding, startFakeLlm } from '../helpers/fake-llm.ts';

/**
 * The AI provider against a local fake OpenAI-compatible server: the configured path works, and
 * every way it can go wrong ends in the built-in fallback with exactly one log line saying why,
 * never with the key in the log.
 */
const apiKey = 'sk-test-secret-key-123';
let fake: FakeLlm;
let lines: string[];

const logged = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
// Generous timeouts, so a loaded machine cannot turn a good answer into a timeout; the tests of
// a hanging endpoint shorten them.
const patient: AiProviderOptions = { chatTimeoutMs: 10_000, streamTimeoutMs: 20_000, embeddingTimeoutMs: 10_000, cooldownMs: 0 };
const short = { ...patient, chatTimeoutMs: 300, embeddingTimeoutMs: 300 };
const timeoutsFor = (mode: string) => (mode === 'hang' ? short : patient);

function provider(settings: Record<string, string | undefined> = {}, options: AiProviderOptions = patient) {
  const log = createLogger('debug', (line) => lines.push(line));
  return createAiProvider({ baseUrl: fake.url, apiKey, model: 'fake-model', embeddingModel: 'fake-embed', ...settings }, log, options);
}

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const delta of stream) out.push(delta);
  return out;
}

const user = (content: string) => [{ role: 'user' as const, content }];

beforeAll(async () => {
  fake = await startFakeLlm();
});
afterAll(() => fake.close());
beforeEach(() => {
  lines = [];
  fake.mode = 'ok';
  fake.reply = 'hello';
  fake.streamDeltas = null;
  fake.hangAfterDeltas = null;
  fake.omitDone = false;
  fake.requests = [];
  fake.closedEarly = 0;
});

describe('chat', () => {
  it('answers with the model text, sends the model and the key as a bearer token, and logs nothing', async () => {
    fake.reply = 'the answer';
    expect(await provider().chat(user('question'), { temperature: 0, maxTokens: 50 })).toBe('the answer');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({
      path: '/v1/chat/completions',
      body: { model: 'fake-model', stream: false, temperature: 0, max_tokens: 50, messages: user('question') },
    });
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(lines).toEqual([]);
  });

  it('sends no Authorization header when no key is configured', async () => {
    expect(await provider({ apiKey: undefined }).chat(user('q'))).toBe('hello');
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  it.each([
    ['fail', /HTTP 500/],
    ['garbage', /not JSON/],
    ['hang', /no answer within 300 ms/],
  ] as const)('falls back (null) when the endpoint answers %s, with one warning naming the reason and never the key', async (mode, reason) => {
    fake.mode = mode;
    expect(await provider({}, timeoutsFor(mode)).chat(user('q'), { purpose: 'clarity' })).toBeNull();
    expect(logged()).toHaveLength(1);
    expect(logged()[0]).toMatchObject({
      level: 'warn',
      message: expect.stringMatching(/falling back/),
      operation: 'chat',
      purpose: 'clarity',
      reason: expect.stringMatching(reason),
    });
    expect(lines.join('\n')).not.toContain(apiKey);
  });

  it('falls back when the answer is JSON but not a chat completion', async () => {
    fake.reply = 'x';
    const client = provider({ baseUrl: `${fake.url}/not-here` });
    expect(await client.chat(user('q'))).toBeNull();
    expect(logged()[0]!.reason).toMatch(/HTTP 404/);
  });

  it('falls back at once, without calling, when not configured; says so at info once, then at debug', async () => {
    const client = provider({ baseUrl: undefined });
    expect(client.configured).toBe(false);
    expect(await client.chat(user('q'))).toBeNull();
    expect(await client.chat(user('q'))).toBeNull();
    expect(fake.requests).toHaveLength(0);
    expect(logged().map((line) => [line.level, line.reason])).toEqual([
      ['info', 'LLM_BASE_URL is not set'],
      ['debug', 'LLM_BASE_URL is not set'],
    ]);
    expect(provider({ model: undefined }).configured).toBe(false);
  });

  it('after a failure, falls back without calling during the cool-down, then calls again', async () => {
    let nowMs = 1_000;
    const client = provider({}, { ...patient, cooldownMs: 10_000, nowMs: () => nowMs });
    fake.mode = 'fail';
    expect(await client.chat(user('q'))).toBeNull();
    fake.mode = 'ok';
    expect(await client.chat(user('q'))).toBeNull();
    expect(fake.requests).toHaveLength(1);
    expect(logged()[1]!.reason).toMatch(/cooling down .*HTTP 500/);
    nowMs += 10_000;
    expect(await client.chat(user('q'))).toBe('hello');
    expect(fake.requests).toHaveLength(2);
  });
});

describe('chatStream', () => {
  it('yields the deltas in order, skipping comments and empty chunks, and stops at [DONE]', async () => {
    fake.streamDeltas = ['Hel', 'lo', ', 世界'];
    expect(await collect(provider().chatStream(user('q')))).toEqual(['Hel', 'lo', ', 世界']);
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, model: 'fake-model' });
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
    expect(lines).toEqual([]);
  });

  it.each(['fail', 'garbage', 'hang'] as const)('yields the fallback instead when the endpoint answers %s before any delta, with one warning', async (mode) => {
    fake.mode = mode;
    const deltas = await collect(provider({}, timeoutsFor(mode)).chatStream(user('q'), { purpose: 'ai-create', fallback: () => ['built', '-in'] }));
    expect(deltas).toEqual(['built', '-in']);
    expect(logged()).toHaveLength(1);
    expect(logged()[0]).toMatchObject({ level: 'warn', operation: 'chat_stream', purpose: 'ai-create' });
  });

  it('ends after the deltas already sent when the model stalls mid-answer, and says so once', async () => {
    fake.streamDeltas = ['one', 'two', 'three'];
    fake.hangAfterDeltas = 2;
    const deltas = await collect(provider({}, { ...patient, streamTimeoutMs: 1_000 }).chatStream(user('q'), { fallback: () => ['fallback'] }));
    expect(deltas).toEqual(['one', 'two']);
    expect(logged()).toHaveLength(1);
    expect(logged()[0]!.reason).toMatch(/not finished within 1000 ms, after 2 deltas/);
  });

  it('keeps the deltas but reports a stream cut off before [DONE], once', async () => {
    fake.streamDeltas = ['one', 'two'];
    fake.omitDone = true;
    expect(await collect(provider().chatStream(user('q'), { fallback: () => ['fallback'] }))).toEqual(['one', 'two']);
    expect(logged()).toHaveLength(1);
    expect(logged()[0]!.reason).toBe('stream ended before [DONE], after 2 deltas');
  });

  it('stops the call to the endpoint when the caller aborts (a client that went away), without a warning', async () => {
    fake.streamDeltas = ['one', 'two', 'three'];
    fake.hangAfterDeltas = 1;
    const controller = new AbortController();
    const deltas: string[] = [];
    for await (const delta of provider().chatStream(user('q'), { signal: controller.signal })) {
      deltas.push(delta);
      controller.abort();
    }
    expect(deltas).toEqual(['one']);
    await expect.poll(() => fake.closedEarly).toBe(1);
    expect(lines).toEqual([]);
  });

  it('stops the call when the consumer stops reading', async () => {
    fake.streamDeltas = ['one', 'two'];
    fake.hangAfterDeltas = 1;
    for await (const delta of provider().chatStream(user('q'))) {
      expect(delta).toBe('one');
      break;
    }
    await expect.poll(() => fake.closedEarly).toBe(1);
  });

  it('yields the fallback when not configured', async () => {
    expect(await collect(provider({ baseUrl: undefined }).chatStream(user('q'), { fallback: () => ['x'] }))).toEqual(['x']);
    expect(await collect(provider({ baseUrl: undefined }).chatStream(user('q')))).toEqual([]);
  });
});

describe('embed', () => {
  it('answers one vector per text in order, sending the embedding model and the key', async () => {
    const texts = ['翻译合同', 'translate a contract'];
    expect(await provider().embed(texts)).toEqual(texts.map(fakeEmbedding));
    expect(fake.requests[0]).toMatchObject({ path: '/v1/embeddings', body: { model: 'fake-embed', input: texts } });
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${apiKey}`);
  });

  it.each(['fail', 'garbage', 'hang'] as const)('answers null when the endpoint answers %s, with one warning', async (mode) => {
    fake.mode = mode;
    expect(await provider({}, timeoutsFor(mode)).embed(['a'])).toBeNull();
    expect(logged()).toHaveLength(1);
    expect(logged()[0]).toMatchObject({ level: 'warn', operation: 'embed' });
  });

  it('answers null without calling when no embedding model is configured', async () => {
    expect(await provider({ embeddingModel: undefined }).embed(['a'])).toBeNull();
    expect(fake.requests).toHaveLength(0);
    expect(logged()[0]).toMatchObject({ level: 'info', reason: 'LLM_EMBEDDING_MODEL is not set' });
  });

  it('refuses a batch larger than the limit without calling', async () => {
    expect(await provider().embed(Array.from({ length: 101 }, () => 'x'))).toBeNull();
    expect(fake.requests).toHaveLength(0);
  });
});
