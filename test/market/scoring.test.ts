import { describe, expect, it } from 'vitest';
import { autoAcceptScoreMin, combine, cosine, priceAlignment, vectorOf } from '../../src/domain/scoring.ts';
import { languageOf, searchQueryOf } from '../../src/domain/text.ts';

describe('scoring (pure)', () => {
  it('aligns price: 1 within or without a budget, budget/price above it', () => {
    expect(priceAlignment(500n, null)).toBe(1);
    expect(priceAlignment(500n, 500n)).toBe(1);
    expect(priceAlignment(1000n, 500n)).toBe(0.5);
    expect(priceAlignment(1n, 0n)).toBe(0);
  });

  it('weighs similarity 0.7, price 0.2 and quality 0.1', () => {
    expect(combine(1, 1, 1).score).toBe(1);
    expect(combine(0.5, 1, 0).score).toBe(0.55);
    expect(autoAcceptScoreMin).toBeGreaterThan(0.2 + 0.1);
  });

  it('meets across languages through the glossary, and not where no word is shared', () => {
    const english = vectorOf({ title: 'Document translation', description: 'Translate documents into Chinese' });
    expect(cosine(vectorOf({ description: '把文件翻译成中文' }), english)).toBeGreaterThan(0.3);
    expect(cosine(vectorOf({ description: '修自行车' }), english)).toBe(0);
  });

  it('builds a database query of letters, digits and Chinese pieces only', () => {
    expect(searchQueryOf("Robert'); DROP TABLE x; -- 翻译 & | !", 64)).toMatch(/^[a-z0-9\u3400-\u9fff:* |]+$/);
    expect(searchQueryOf('the and of', 64)).toBe('');
    expect(languageOf('把文件翻译成 PDF')).toBe('zh');
    expect(languageOf('Translate a PDF 文件')).toBe('en');
  });
});
