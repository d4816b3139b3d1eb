import { describe, expect, it } from 'vitest';
import { extractSkills } from '../../src/domain/skill-extraction.ts';
import { draftSkill, headOf, priceOf, pricingModelOf } from '../../src/domain/skill-drafts.ts';
import { deliveryHoursOf, draftTask } from '../../src/domain/task-drafts.ts';
import { limits } from '../../src/limits.ts';

/**
 * The built-in skill extraction (src/domain/skill-extraction.ts) on short texts whose whole answer
 * is written out: which kinds, in which order, with which tags, evidence and confidence, in the
 * text's language. The API tests run it on a page-long CV and a résumé; these pin each rule.
 */
describe('built-in extraction', () => {
  it('finds the kinds a text shows, strongest first, each with its tags, evidence and confidence', () => {
    const text =
      'I build React and Vue front ends with TypeScript. My logos and brand guidelines win clients! Logo work since 2015; I also write Python scripts.';
    expect(extractSkills(text)).toEqual({
      language: 'en',
      skills: [
        {
          key: 'logo_brand',
          name: 'Logo and brand identity design',
          description: 'My logos and brand guidelines win clients. Logo work since 2015',
          category: 'design',
          tags: ['logos', 'brand'],
          evidence: ['My logos and brand guidelines win clients', 'Logo work since 2015'],
          confidence: 0.95,
        },
        {
          key: 'web_frontend',
          name: 'Web front-end development',
          description: 'I build React and Vue front ends with TypeScript',
          category: 'tech_dev',
          tags: ['react', 'vue', 'typescript'],
          evidence: ['I build React and Vue front ends with TypeScript'],
          confidence: 0.8,
        },
        {
          key: 'python',
          name: 'Python programming',
          description: 'I also write Python scripts',
          category: 'tech_dev',
          tags: ['python', 'scripts'],
          evidence: ['I also write Python scripts'],
          confidence: 0.65,
        },
      ],
    });
  });

  it('answers a Chinese text in Chinese, a kind shown by one word included while fewer than three are stronger', () => {
    expect(extractSkills('我做网站开发和前端。也设计标志。')).toEqual({
      language: 'zh',
      skills: [
        {
          key: 'web_frontend',
          name: '网页前端开发',
          description: '我做网站开发和前端',
          category: 'tech_dev',
          tags: ['前端', '网站开发'],
          evidence: ['我做网站开发和前端'],
          confidence: 0.65,
        },
        { key: 'logo_brand', name: '标志与品牌设计', description: '也设计标志', category: 'design', tags: ['标志'], evidence: ['也设计标志'], confidence: 0.5 },
      ],
    });
    expect(extractSkills('x')).toEqual({ language: 'en', skills: [] });
    expect(extractSkills('')).toEqual({ language: 'zh', skills: [] });
  });

  it('leaves out kinds shown by one word once three are shown by two or more', () => {
    const text = 'React and Vue apps. Docker and Kubernetes deploys. Figma wireframes and prototypes. Photoshop too.';
    const keys = extractSkills(text).skills.map((skill) => skill.key);
    expect(keys.slice(0, 3).sort()).toEqual(['devops', 'ui_ux', 'web_frontend']);
    expect(keys).not.toContain('graphic');
    expect(extractSkills('React and Vue apps. Photoshop too.').skills.map((skill) => skill.key)).toEqual(['web_frontend', 'graphic']);
  });

  it('matches whole words, word starts for a trailing *, and phrases only as phrases', () => {
    expect(extractSkills('I reacted calmly.').skills).toEqual([]);
    expect(extractSkills('Illustrations and sketches.').skills.map((skill) => skill.tags)).toEqual([['illustrations', 'sketches']]);
    expect(extractSkills('A brand guideline book.').skills[0]!.tags).toEqual(['brand']);
    expect(extractSkills('Front end work').skills[0]!.key).toBe('web_frontend');
    expect(extractSkills('The end. Front matters').skills.map((skill) => skill.key)).not.toContain('web_frontend');
  });

  it('keeps at most the limits: evidence sentences, their length, tags, candidates and the text read', () => {
    const many = Array.from({ length: limits.skillEvidenceSentencesMax + 3 }, (_, index) => `React project ${index}`).join('. ');
    const [frontend] = extractSkills(many).skills;
    expect(frontend!.evidence).toHaveLength(limits.skillEvidenceSentencesMax);
    const long = `React ${'and more '.repeat(200)}`;
    expect(extractSkills(long).skills[0]!.evidence[0]!.length).toBe(limits.skillEvidenceLengthMax);
    const tagged = extractSkills('React, Vue, Angular, Svelte, Tailwind, CSS and HTML pages, responsive.').skills[0]!;
    expect(tagged.tags).toHaveLength(5);
    expect(tagged.confidence).toBe(0.95);
    const everything =
      'React Vue. Django Flask. Docker Kubernetes. Figma wireframes. Logo brand. Photoshop posters. Illustrations sketches. Selenium testing. Pentest OWASP. Kotlin Swift.';
    expect(extractSkills(everything).skills.length).toBeLessThanOrEqual(limits.skillCandidatesPerExtractMax);
    const hidden = `${'x '.repeat(limits.skillExtractTextLengthMax)} React and Vue.`;
    expect(extractSkills(hidden).skills).toEqual([]);
    expect(extractSkills('I drew illustrationsforchildrenbooksandmagazines.').skills[0]!.tags).toEqual(['illustrationsforchildrenbooksa']);
  });

  it('orders tags by how many sentences show them, not by which came first', () => {
    expect(extractSkills('Brand guidelines. Logo design. Logos for startups.').skills.map((skill) => skill.tags)).toEqual([['logo', 'brand']]);
  });

  it('adds kinds shown by one word only up to three candidates, the first shown first, and none past three strong ones', () => {
    expect(extractSkills('React and Vue. Photoshop. Excel. Selenium.').skills.map((skill) => skill.key)).toEqual(['web_frontend', 'graphic', 'data_analysis']);
    const fiveStrong = 'React and Vue. Docker and Kubernetes. Figma wireframes. Django and Flask. Photoshop. Excel. Selenium.';
    expect(extractSkills(fiveStrong).skills.map((skill) => skill.key)).toEqual(['web_frontend', 'devops', 'ui_ux', 'backend', 'python']);
  });

  it('puts a kind with more evidence first among kinds shown by as many words', () => {
    expect(extractSkills('Photoshop. Excel sheets. Excel reports.').skills.map((skill) => [skill.key, skill.evidence.length])).toEqual([
      ['data_analysis', 2],
      ['graphic', 1],
    ]);
  });

  it("joins a Chinese candidate's evidence with the Chinese full stop", () => {
    expect(extractSkills('我做前端。我也做前端页面。').skills[0]).toMatchObject({
      description: '我做前端。我也做前端页面',
      evidence: ['我做前端', '我也做前端页面'],
    });
  });
});

describe('the built-in drafters', () => {
  it('reads a price only with its currency or sign, through minor units', () => {
    expect(['$50.55', '12.55 dollars', '5 dollar'].map(priceOf)).toEqual(['50.55', '12.55', '5.00']);
    expect(['$50', '$ 50.5', '¥80', '￥80', '50 UT', '50ut', '12.5 dollars', '30 rmb', '40元', '40 块', '7 usd', '9 CNY'].map(priceOf)).toEqual([
      '50.00',
      '50.50',
      '80.00',
      '80.00',
      '50.00',
      '50.00',
      '12.50',
      '30.00',
      '40.00',
      '40.00',
      '7.00',
      '9.00',
    ]);
    for (const text of ['50', 'about 50 pages', '50 utilities', '', 'USD']) expect(priceOf(text)).toBeUndefined();
  });

  it('reads the pricing model from its words in both languages, fixed otherwise', () => {
    expect(pricingModelOf('40/ hr')).toBe('per_hour');
    expect(
      ['40 per hour', 'hourly', '$40 an hour', '40/hr', '每小时 40', 'per day', 'daily rate', '按天', 'per call', '按次', 'negotiable', '面议', 'a logo'].map(
        pricingModelOf,
      ),
    ).toEqual([
      'per_hour',
      'per_hour',
      'per_hour',
      'per_hour',
      'per_hour',
      'per_day',
      'per_day',
      'per_day',
      'per_use',
      'per_use',
      'negotiable',
      'negotiable',
      'fixed',
    ]);
  });

  it('heads a draft with the first clause, cut at a word', () => {
    expect(headOf('Translate contracts, fast. Also letters')).toBe('Translate contracts');
    expect(headOf(', only a comma')).toBe(', only a comma');
    const long = `${'word '.repeat(40)}end`;
    const head = headOf(long);
    expect(head.length).toBeLessThanOrEqual(limits.skillNameLengthMax);
    expect(head.endsWith('word')).toBe(true);
    expect(headOf('x'.repeat(200))).toBe('x'.repeat(limits.skillNameLengthMax));
  });

  it('titles a draft with a first clause of up to 100 characters whole, a longer one cut before the word it would split', () => {
    const titleOf = (prompt: string) => Object.fromEntries(draftTask({ prompt })).title;
    const word = 'abcdefgh ';
    expect(titleOf('Walk my dog , every morning')).toBe('Walk my dog');
    expect(titleOf(`${word.repeat(11)}a`)).toBe(`${word.repeat(11)}a`);
    expect(titleOf(word.repeat(15))).toBe(word.repeat(11).trim());
    expect(titleOf(`${'x'.repeat(90)}  ${'y'.repeat(20)}`)).toBe('x'.repeat(90));
    // A cut whose last space is in its first 20 characters keeps the 100 characters instead.
    expect(titleOf(`${'a'.repeat(20)} ${'b'.repeat(100)}`)).toBe(`${'a'.repeat(20)} ${'b'.repeat(79)}`);
    expect(Object.fromEntries(draftSkill({ prompt: word.repeat(15) })).name).toBe(word.repeat(11).trim());
  });

  it('reads a deadline in hours, days or weeks, Chinese numerals too, within bounds (three days without one)', () => {
    expect(['两 天', 'in 1 hour', '10 hr', '1 day', '1 week'].map(deliveryHoursOf)).toEqual([48, 1, 10, 24, 168]);
    expect(
      ['in 48 hours', 'within 3 days', '2 weeks', '5h', '10 hrs', '两天内', '3天', '一周', '12小时', 'in a week', 'soon', '0 hours', '9999 weeks'].map(
        deliveryHoursOf,
      ),
    ).toEqual([48, 72, 336, 5, 10, 48, 72, 168, 12, 168, 72, 1, limits.skillDurationHoursMax]);
  });

  it("drafts a skill field by field in the prompt's language", () => {
    const fields = Object.fromEntries(draftSkill({ prompt: 'I do English to Chinese translation and localization, 40 dollars per hour', city: 'Shanghai' }));
    expect(fields).toMatchObject({ category: 'translation', mode: 'online', city: 'Shanghai', pricing_model: 'per_hour', ut_price: '40.00' });
    expect(draftSkill({ prompt: 'I translate contracts' }).map(([name]) => name)).toEqual(['name', 'category', 'mode', 'tags', 'description', 'pricing_model']);
    expect(String(fields.description)).toContain('Boundaries: work beyond this description is quoted separately');
    expect(Object.fromEntries(draftSkill({ prompt: 'I translate contracts' })).description).toBe(
      'I translate contracts\n\nDeliverables: the translation work described above, in the formats agreed before work starts. Boundaries: work beyond this description is quoted separately; up to two rounds of revisions are included.',
    );
    const chinese = Object.fromEntries(draftSkill({ prompt: '我设计标志和品牌', mode: 'offline', category: 'design' }));
    expect(chinese).toMatchObject({ name: '标志与品牌设计', category: 'design', mode: 'offline', pricing_model: 'fixed' });
    expect(String(chinese.description)).toContain('服务范围：描述以外的工作另行报价');
    expect(Object.fromEntries(draftSkill({ prompt: 'Walk my dog' }))).toMatchObject({ name: 'Walk my dog', category: 'other', tags: [] });
  });

  it("keeps a draft's description within its limit, with room for the closing, whatever the prompt's length", () => {
    // The request schemas cap a prompt at limits.skillPromptLengthMax, well below these cuts; the
    // drafters keep their own cut so that raising that limit cannot produce a description the
    // skill or task schema would refuse.
    const words = (length: number) =>
      'translate '
        .repeat(Math.ceil(length / 10))
        .slice(0, length)
        .trim();
    for (const length of [limits.skillDescriptionLengthMax - 400, limits.skillDescriptionLengthMax, limits.skillDescriptionLengthMax + 1_000]) {
      const prompt = words(length);
      const description = String(Object.fromEntries(draftSkill({ prompt })).description);
      expect(description.length).toBeLessThanOrEqual(limits.skillDescriptionLengthMax);
      expect(description.startsWith(`${prompt.slice(0, limits.skillDescriptionLengthMax - 400)}\n\nDeliverables:`)).toBe(true);
    }
    for (const length of [limits.taskDescriptionLengthMax, limits.taskDescriptionLengthMax + 1_000]) {
      const prompt = words(length);
      const description = String(Object.fromEntries(draftTask({ prompt })).description);
      expect(description.length).toBeLessThanOrEqual(limits.taskDescriptionLengthMax);
      expect(description.startsWith(`${prompt.slice(0, limits.taskDescriptionLengthMax - 400)}\n\n`)).toBe(true);
    }
  });

  it('drafts a task field by field: title, kind, deadline, bounty', () => {
    const fields = draftTask({ prompt: 'Translate my contract into Chinese within 2 days, $60', city: 'Beijing' });
    expect(fields.map(([name]) => name)).toEqual([
      'title',
      'mode',
      'city',
      'category',
      'tags',
      'description',
      'delivery_hours',
      'preferred_billing_model',
      'bounty_amount',
    ]);
    expect(Object.fromEntries(fields)).toMatchObject({
      title: 'Translate my contract into Chinese within 2 days',
      city: 'Beijing',
      category: 'translation',
      delivery_hours: 48,
      preferred_billing_model: 'fixed',
      bounty_amount: '60.00',
    });
    expect(String(Object.fromEntries(fields).description)).toContain('Acceptance: the publisher checks the delivery against this description within two days.');
    const plain = Object.fromEntries(draftTask({ prompt: 'Walk my dog' }));
    expect(plain).not.toHaveProperty('category');
    expect(plain).not.toHaveProperty('bounty_amount');
    expect(plain).toMatchObject({ mode: 'online', delivery_hours: 72, tags: [] });
    expect(String(Object.fromEntries(draftTask({ prompt: '三天内设计一个标志' })).description)).toContain('验收：发布者在两天内按本描述验收。');
  });
});
