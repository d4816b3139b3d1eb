import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAiProvider } from '../../src/ai/provider.ts';
import { analyseClarity, detectLanguage } from '../../src/domain/clarity.ts';
import { createAnalysisEngine } from '../../src/engine/market/index.ts';
import { createLogger } from '../../src/logger.ts';
import { type FakeLlm, startFakeLlm } from '../helpers/fake-llm.ts';

/**
 * The clarity analyser: a built-in, deterministic score with reasons and suggestions in the
 * description's language, and engine.analysis.evaluateClarity, which asks a configured model
 * and accepts only a valid answer in the right language.
 */
const vague = {
  en: 'Need something for my website, maybe some stuff.',
  zh: '帮我弄一下网站，随便做点东西。',
};
const precise = {
  en:
    'Build a 5-page landing page for our dental clinic with a booking form. Deliver the HTML and CSS source files and a Figma mockup. ' +
    'Must pass Lighthouse accessibility at least 90 and work on mobile. Budget 800 CNY, deadline within 7 days. The site is for new patients who search on their phones.',
  zh: '为我们的牙科诊所开发一个5页的落地页网站，包含在线预约表单。交付HTML源文件和Figma设计稿，格式为PDF说明文档。要求移动端兼容，验收标准：Lighthouse无障碍评分至少90。预算800元，7天内交付。主要面向通过手机搜索的新患者。',
};
const hasHan = (text: string) => /\p{Script=Han}/u.test(text);

describe('the built-in clarity analyser', () => {
  it.each(['en', 'zh'] as const)('scores a precise %s description above a vague one, each within 0..1', (language) => {
    const low = analyseClarity(vague[language]);
    const high = analyseClarity(precise[language]);
    expect(low.score).toBeGreaterThanOrEqual(0);
    expect(high.score).toBeLessThanOrEqual(1);
    expect(high.score).toBeGreaterThan(low.score + 0.5);
    expect(low.score).toBeLessThan(0.3);
    expect(high.score).toBeGreaterThan(0.8);
  });

  it('answers a vague English description in English, naming each missing part and the vague words', () => {
    const result = analyseClarity(vague.en);
    expect(result.language).toBe('en');
    expect(result.suggestions.length).toBeGreaterThanOrEqual(5);
    expect([...result.reasons, ...result.suggestions].some(hasHan)).toBe(false);
    expect(result.reasons).toContain('It sets no deadline.');
    expect(result.suggestions.join(' ')).toMatch(/"something"/);
  });

  it('answers a vague Chinese description in Chinese, naming each missing part and the vague words', () => {
    const result = analyseClarity(vague.zh);
    expect(result.language).toBe('zh');
    expect(result.suggestions.length).toBeGreaterThanOrEqual(5);
    expect([...result.reasons, ...result.suggestions].every(hasHan)).toBe(true);
    expect(result.reasons).toContain('没有给出截止时间。');
    expect(result.suggestions.join('')).toContain('“随便”');
  });

  it('has few or no suggestions for a precise description', () => {
    expect(analyseClarity(precise.en).suggestions.length).toBeLessThanOrEqual(1);
    expect(analyseClarity(precise.zh).suggestions.length).toBeLessThanOrEqual(1);
  });

  it('is deterministic, and an empty text scores 0 with suggestions', () => {
    expect(analyseClarity(precise.zh)).toEqual(analyseClarity(precise.zh));
    expect(analyseClarity('   ')).toMatchObject({ score: 0, language: 'en' });
    expect(analyseClarity('').suggestions.length).toBeGreaterThan(0);
  });

  it('tells the language by script: Chinese with a few English terms stays Chinese', () => {
    expect(detectLanguage('用React做一个网站，需要登录功能')).toBe('zh');
    expect(detectLanguage('Translate my resume into Chinese, name: 王小明')).toBe('en');
    expect(detectLanguage('12345')).toBe('en');
  });
});

describe('engine.analysis.evaluateClarity', () => {
  let fake: FakeLlm;
  let lines: string[];
  // A generous timeout unless the test is of a hanging endpoint: a loaded machine must not turn a
  // good answer into a timeout.
  const analysis = (baseUrl?: string, chatTimeoutMs = 10_000) => {
    const log = createLogger('debug', (line) => lines.push(line));
    const ai = createAiProvider({ baseUrl, model: 'fake-model', apiKey: 'k' }, log, { chatTimeoutMs, cooldownMs: 0 });
    return createAnalysisEngine({ ai, log });
  };
  beforeAll(async () => {
    fake = await startFakeLlm();
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    lines = [];
    fake.mode = 'ok';
    fake.requests = [];
  });

  it('uses the built-in analyser when no model is configured, and says so in one log line', async () => {
    expect(await analysis(undefined).evaluateClarity(vague.zh)).toEqual({ ...analyseClarity(vague.zh), basis: 'built_in' });
    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        level: 'info',
        message: 'AI provider not configured; using the built-in analyser',
        purpose: 'clarity',
        reason: 'LLM_BASE_URL is not set',
      }),
    ]);
  });

  it("uses the model's JSON answer (even in a code fence) when it is valid and in the text's language", async () => {
    fake.reply = '```json\n{"score": 0.42, "reasons": ["缺少截止时间"], "suggestions": ["写明交付日期"]}\n```';
    const result = await analysis(fake.url).evaluateClarity(vague.zh);
    expect(result).toEqual({ score: 0.42, language: 'zh', reasons: ['缺少截止时间'], suggestions: ['写明交付日期'], basis: 'llm' });
    expect(JSON.stringify(fake.requests[0]!.body.messages)).toContain('Simplified Chinese');
    expect(lines).toEqual([]);
  });

  it.each([
    ['not JSON', 'This description is fairly clear.', /not the JSON asked for/],
    ['a score out of range', '{"score": 7, "reasons": ["x"], "suggestions": []}', /not the JSON asked for/],
    ['no reasons', '{"score": 0.5, "reasons": [], "suggestions": []}', /not the JSON asked for/],
    ['the wrong language', '{"score": 0.5, "reasons": ["No deadline"], "suggestions": ["Add a date"]}', /not in Simplified Chinese/],
  ])('falls back to the built-in analyser with one log line when the answer is %s', async (_name, reply, reason) => {
    fake.reply = reply;
    const result = await analysis(fake.url).evaluateClarity(vague.zh);
    expect(result).toEqual({ ...analyseClarity(vague.zh), basis: 'built_in' });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', purpose: 'clarity', reason: expect.stringMatching(reason) });
  });

  it('falls back when the endpoint fails or hangs', async () => {
    for (const mode of ['fail', 'hang'] as const) {
      fake.mode = mode;
      expect(await analysis(fake.url, mode === 'hang' ? 300 : 10_000).evaluateClarity(precise.en)).toEqual({
        ...analyseClarity(precise.en),
        basis: 'built_in',
      });
    }
    expect(lines).toHaveLength(2);
  });
});
