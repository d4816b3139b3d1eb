import { describe, expect, it } from 'vitest';
import { languageOf, piecesOfWord, searchQueryOf, stem, termsOf } from '../src/domain/text.ts';

/**
 * How text becomes matching terms (src/domain/text.ts), word by word: the stemmer's every rule and
 * its edges, stop words, Chinese pieces, glossary concepts, the language guess and the database
 * query. The matching tests show the ranking this feeds; these pin each step (issue 16, mutation
 * testing of the text group).
 */
describe('the stemmer', () => {
  it.each([
    ['cat', 'cat'], ['bus', 'bus'], ['ties', 'tie'], ['cities', 'city'], ['studies', 'study'],
    ['sing', 'sing'], ['bring', 'bring'], ['coding', 'cod'], ['translating', 'translat'],
    ['bed', 'bed'], ['used', 'used'], ['tested', 'test'], ['designed', 'design'],
    ['classes', 'class'], ['boxes', 'box'], ['matches', 'match'], ['wishes', 'wish'], ['shoes', 'shoe'],
    ['logos', 'logo'], ['glass', 'glass'], ['status', 'status'], ['reports', 'report'], ['data', 'data'], ['design', 'design'],
  ])('stems %s to %s', (word, expected) => {
    expect(stem(word)).toBe(expected);
  });
});

describe('terms of a text', () => {
  it('keeps English words lower-cased without stop words or single letters, stemmed and raw', () => {
    const terms = termsOf('Need a Translator for the Reports, a 3 page PDF and x');
    expect(terms.rawWords).toEqual(['translator', 'reports', '3', 'page', 'pdf', 'x'].filter((word) => word !== 'x'));
    expect(terms.words).toEqual(['translator', 'report', '3', 'page', 'pdf']);
  });

  it('cuts Chinese runs into overlapping two-character pieces, without the empty ones, and skips single characters', () => {
    const terms = termsOf('我需要翻译合同 和 文件');
    expect(terms.pieces).toEqual(['需要', '要翻', '翻译', '译合', '合同', '文件'].filter((piece) => piece !== '需要'));
    expect(terms.words).toEqual([]);
    expect(termsOf('好').pieces).toEqual([]);
  });

  it('finds glossary concepts in either language, naming the form found first', () => {
    const english = termsOf('Translate my contract');
    const chinese = termsOf('翻译合同');
    const shared = [...english.concepts.keys()].filter((concept) => chinese.concepts.has(concept));
    expect(shared.length).toBeGreaterThan(0);
    expect([...english.concepts.values()]).toContain('translate');
    expect([...chinese.concepts.values()].some((form) => /翻译|合同/.test(form))).toBe(true);
    expect(termsOf('the and of').concepts.size).toBe(0);
  });
});

describe('the language of a text', () => {
  it('is Chinese when Chinese characters are at least as many as English words', () => {
    expect(languageOf('翻译合同')).toBe('zh');
    expect(languageOf('Translate the contract please')).toBe('en');
    expect(languageOf('翻译 contract')).toBe('zh');
    expect(languageOf('翻 contract review')).toBe('en');
    expect(languageOf('')).toBe('zh');
    expect(languageOf('12345')).toBe('zh');
  });
});

describe('pieces and the database query', () => {
  it('cuts a word into its two-character pieces, a single character staying whole', () => {
    expect(piecesOfWord('翻译合同')).toEqual(['翻译', '译合', '合同']);
    expect(piecesOfWord('合同')).toEqual(['合同']);
    expect(piecesOfWord('合')).toEqual(['合']);
  });

  it('ORs concepts in both languages (long English stems as prefixes), then words and pieces, capped', () => {
    const query = searchQueryOf('translate 合同 invoices', 100);
    const atoms = query.split(' | ');
    expect(atoms).toContain('invoices');
    expect(atoms).toContain('合同');
    expect(atoms.some((atom) => atom.endsWith(':*'))).toBe(true);
    expect(atoms.every((atom) => /^[a-z0-9\u3400-\u9fff]+(?::\*)?$/.test(atom))).toBe(true);
    expect(searchQueryOf('translate 合同 invoices', 2).split(' | ')).toHaveLength(2);
    expect(searchQueryOf('the and of', 10)).toBe('');
    // Only letters and digits reach the query: no input changes its syntax.
    const hostile = searchQueryOf("x'); DROP TABLE users; -- & !a | b:*", 100);
    expect(hostile).not.toMatch(/['();&!-]/);
    expect(hostile.split(' | ')).toEqual(expect.arrayContaining(['drop', 'users']));
  });
});
