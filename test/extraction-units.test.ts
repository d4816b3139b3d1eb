import { describe, expect, it } from 'vitest';
import { extractSkills } from '../src/domain/skill-extraction.ts';
import { limits } from '../src/limits.ts';

/**
 * The built-in skill extraction (src/domain/skill-extraction.ts) on short texts whose whole answer
 * is written out: which kinds, in which order, with which tags, evidence and confidence, in the
 * text's language. The API tests run it on a page-long CV and a résumé; these pin each rule.
 */
describe('built-in extraction', () => {
  it('finds the kinds a text shows, strongest first, each with its tags, evidence and confidence', () => {
    const text = 'I build React and Vue front ends with TypeScript. My logos and brand guidelines win clients! Logo work since 2015; I also write Python scripts.';
    expect(extractSkills(text)).toEqual({
      language: 'en',
      skills: [
        {
          key: 'logo_brand', name: 'Logo and brand identity design', description: 'My logos and brand guidelines win clients. Logo work since 2015', category: 'design',
          tags: ['logos', 'brand'], evidence: ['My logos and brand guidelines win clients', 'Logo work since 2015'], confidence: 0.95,
        },
        {
          key: 'web_frontend', name: 'Web front-end development', description: 'I build React and Vue front ends with TypeScript', category: 'tech_dev',
          tags: ['react', 'vue', 'typescript'], evidence: ['I build React and Vue front ends with TypeScript'], confidence: 0.8,
        },
        {
          key: 'python', name: 'Python programming', description: 'I also write Python scripts', category: 'tech_dev',
          tags: ['python', 'scripts'], evidence: ['I also write Python scripts'], confidence: 0.65,
        },
      ],
    });
  });

  it('answers a Chinese text in Chinese, a kind shown by one word included while fewer than three are stronger', () => {
    expect(extractSkills('我做网站开发和前端。也设计标志。')).toEqual({
      language: 'zh',
      skills: [
        { key: 'web_frontend', name: '网页前端开发', description: '我做网站开发和前端', category: 'tech_dev', tags: ['前端', '网站开发'], evidence: ['我做网站开发和前端'], confidence: 0.65 },
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
    const everything = 'React Vue. Django Flask. Docker Kubernetes. Figma wireframes. Logo brand. Photoshop posters. Illustrations sketches. Selenium testing. Pentest OWASP. Kotlin Swift.';
    expect(extractSkills(everything).skills.length).toBeLessThanOrEqual(limits.skillCandidatesPerExtractMax);
    const hidden = `${'x '.repeat(limits.skillExtractTextLengthMax)} React and Vue.`;
    expect(extractSkills(hidden).skills).toEqual([]);
  });
});
