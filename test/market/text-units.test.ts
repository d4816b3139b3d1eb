import { createHash } from 'node:crypto';
import { effectiveStatus, requireOpen } from '../../src/domain/demands.ts';
import { optimizeDescription } from '../../src/domain/description-optimizer.ts';
import { cnyToUt, defaultRange, overlapWeight, percentilesOf, unitPriceOf, weightedPercentile, wordsOf } from '../../src/domain/pricing-suggestion.ts';
import { analyseClarity, detectLanguage, unmetCriteria } from '../../src/domain/clarity.ts';
import { describe, expect, it } from 'vitest';
import {
  blendedSimilarity,
  combine,
  cosine,
  denseCosine,
  explain,
  normalizedQuality,
  priceAlignment,
  sharedTerms,
  vectorOf,
} from '../../src/domain/scoring.ts';
import {
  cosineWithStored,
  flatTextOf,
  normOf,
  storedOrComputed,
  storedVectorOf,
  vectorOfStored,
  wordColumnsOf,
  wordsDigestOf,
} from '../../src/domain/term-vectors.ts';
import { languageOf, piecesOfWord, searchQueryOf, stem, termsOf } from '../../src/domain/text.ts';

/**
 * How text becomes matching terms (src/domain/text.ts), word by word: the stemmer's every rule and
 * its edges, stop words, Chinese pieces, glossary concepts, the language guess and the database
 * query. The matching tests show the ranking this feeds; these pin each step (issue 16, mutation
 * testing of the text group).
 */
describe('the stemmer', () => {
  it.each([
    ['cat', 'cat'],
    ['bus', 'bus'],
    ['ties', 'tie'],
    ['cities', 'city'],
    ['studies', 'study'],
    ['sing', 'sing'],
    ['bring', 'bring'],
    ['coding', 'cod'],
    ['translating', 'translat'],
    ['bed', 'bed'],
    ['used', 'used'],
    ['tested', 'test'],
    ['designed', 'design'],
    ['classes', 'class'],
    ['boxes', 'box'],
    ['matches', 'match'],
    ['wishes', 'wish'],
    ['shoes', 'shoe'],
    ['gas', 'gas'],
    ['assessees', 'assessee'],
    ['logos', 'logo'],
    ['glass', 'glass'],
    ['status', 'status'],
    ['reports', 'report'],
    ['data', 'data'],
    ['design', 'design'],
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

  it('finds a concept of a short stem only in the word itself or its plural, never as the start of another word', () => {
    expect([...termsOf('seo audit').concepts]).toContainEqual(['seo', 'seo']);
    expect([...termsOf('apps').concepts]).toContainEqual(['app', 'apps']);
    expect([...termsOf('apple pie').concepts.keys()]).not.toContain('app');
  });

  it('keeps the English words on either side of Chinese apart', () => {
    expect(termsOf('logo设计design').rawWords).toEqual(['logo', 'design']);
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
    // Stems of three letters or fewer stay whole words: "app:*" would find "apple".
    const short = searchQueryOf('mobile apps', 100).split(' | ');
    expect(short).toEqual(expect.arrayContaining(['app', 'io']));
    expect(short).not.toContain('app:*');
    expect(short).not.toContain('io:*');
    // An English text finds Chinese listings through its concepts' Chinese forms, and Chinese text through its pieces.
    expect(searchQueryOf('translate', 100).split(' | ')).toContain('翻译');
    expect(searchQueryOf('烤面包', 100)).toBe('烤面 | 面包');
    // Only letters and digits reach the query: no input changes its syntax.
    const hostile = searchQueryOf("x'); DROP TABLE users; -- & !a | b:*", 100);
    expect(hostile).not.toMatch(/['();&!-]/);
    expect(hostile.split(' | ')).toEqual(expect.arrayContaining(['drop', 'users']));
  });
});

describe('stored term vectors', () => {
  const text = { title: 'Contract translation', tags: ['legal'], description: 'Translate contracts, invoices and reports from English into Chinese' };

  it('keeps the heaviest terms, ties by term, weights to three decimals, with their norm', () => {
    const full = vectorOf(text);
    const stored = storedVectorOf(text, 3);
    expect(stored.terms).toHaveLength(3);
    const heaviest = [...full]
      .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
      .slice(0, 3)
      .map(([term, weight]) => [term, Math.round(weight * 1000) / 1000]);
    expect(stored.terms).toEqual(heaviest);
    expect(stored.terms.every(([, weight]) => Number.isInteger(weight * 1000))).toBe(true);
    expect(stored.norm).toBeCloseTo(Math.sqrt(stored.terms.reduce((sum, [, weight]) => sum + weight * weight, 0)), 12);
    // Equal weights are ordered by term, so every instance keeps the same ones.
    const tied = storedVectorOf({ description: 'zebra apple mango' }, 2);
    expect(tied.terms.map(([term]) => term)).toEqual(['w:apple', 'w:mango']);
  });

  it('gives the cosine of a vector with a stored one from the stored norm, and 0 when either is empty', () => {
    const stored = storedVectorOf(text);
    const vector = vectorOfStored(stored);
    expect(cosineWithStored(vector, normOf(vector), stored)).toBeCloseTo(1, 9);
    const other = vectorOf({ description: 'Translate invoices' });
    const expected = cosine(other, vector);
    expect(cosineWithStored(other, normOf(other), stored)).toBeCloseTo(expected, 9);
    expect(cosineWithStored(other, 0, stored)).toBe(0);
    expect(cosineWithStored(other, normOf(other), { terms: [], norm: 0 })).toBe(0);
    // A text with no terms at all (stop words only) shares nothing: 0, not NaN, so it still sorts.
    expect(cosine(new Map(), vector)).toBe(0);
    expect(cosine(vector, new Map())).toBe(0);
    expect(
      normOf(
        new Map([
          ['a', 3],
          ['b', 4],
        ]),
      ),
    ).toBe(5);
  });

  it("uses a row's stored vector when it has one, and computes one when it has none", () => {
    const stored = { terms: [['only', 1]] as [string, number][], norm: 1 };
    expect(storedOrComputed({ ...text, term_vector: stored })).toBe(stored);
    expect(storedOrComputed({ ...text, term_vector: null })).toEqual(storedVectorOf(text));
  });

  it('digests the words a model reads (title, tags, description), and writes both columns from them', () => {
    expect(flatTextOf(text)).toBe('Contract translation legal Translate contracts, invoices and reports from English into Chinese');
    expect(flatTextOf({ description: 'just this' })).toBe('  just this');
    expect(flatTextOf({ title: 'Tax return', tags: ['legal', 'tax'], description: 'Filing' })).toBe('Tax return legal tax Filing');
    expect(wordsDigestOf(text)).toBe(createHash('sha256').update(flatTextOf(text)).digest('base64url'));
    expect(wordsDigestOf(text)).not.toBe(wordsDigestOf({ ...text, tags: ['tax'] }));
    expect(wordColumnsOf(text)).toEqual({ term_vector: JSON.stringify(storedVectorOf(text)), words_sha: wordsDigestOf(text) });
  });
});

describe('the score and its explanation', () => {
  it('weighs title and tags twice, and concepts over words over Chinese pieces', () => {
    const vector = vectorOf({ title: 'Logo', description: 'logo 设计' });
    expect(vector.get('w:logo')).toBe(3);
    const concepts = [...vector.keys()].filter((term) => term.startsWith('c:'));
    for (const concept of concepts) expect(vector.get(concept)! % 1.5).toBe(0);
    expect(vector.get('p:设计')).toBeCloseTo(0.6, 9);
    expect(vectorOf({ description: 'logo' }).get('w:logo')).toBe(1);
  });

  it('takes cosines of sparse and dense vectors, 0 for nothing shared, empty, mismatched or opposite', () => {
    expect(cosine(new Map([['a', 1]]), new Map([['b', 1]]))).toBe(0);
    expect(
      cosine(
        new Map([
          ['a', 3],
          ['b', 4],
        ]),
        new Map([
          ['a', 3],
          ['b', 4],
        ]),
      ),
    ).toBeCloseTo(1, 12);
    expect(
      cosine(
        new Map([['a', 1]]),
        new Map([
          ['a', 1],
          ['b', 1],
        ]),
      ),
    ).toBeCloseTo(Math.SQRT1_2, 12);
    expect(denseCosine([1, 0], [1, 0])).toBe(1);
    expect(denseCosine([1, 0], [0, 1])).toBe(0);
    expect(denseCosine([1, 1], [1, 0])).toBeCloseTo(Math.SQRT1_2, 12);
    expect(denseCosine([3, 4], [6, 8])).toBeCloseTo(1, 12);
    expect(denseCosine([1, 0], [-1, 0])).toBe(0);
    expect(denseCosine([], [])).toBe(0);
    expect(denseCosine([1], [1, 2])).toBe(0);
    expect(denseCosine([0, 0], [1, 2])).toBe(0);
    expect(denseCosine([1, 2], [0, 0])).toBe(0);
  });

  it('aligns prices to four decimals, scales quality into 0..1, and blends an embedding half and half', () => {
    expect(priceAlignment(300n, 100n)).toBe(0.3333);
    expect(priceAlignment(499n, 500n)).toBe(1);
    expect(priceAlignment(501n, 500n)).toBe(0.998);
    // A free capability is within a zero budget.
    expect(priceAlignment(0n, 0n)).toBe(1);
    expect(priceAlignment(1n, 0n)).toBe(0);
    expect([normalizedQuality(0), normalizedQuality(2.5), normalizedQuality(5), normalizedQuality(7), normalizedQuality(-1)]).toEqual([0, 0.5, 1, 1, 0]);
    expect(blendedSimilarity(0.4, null)).toBe(0.4);
    expect(blendedSimilarity(0.4, 0.8)).toBeCloseTo(0.6, 12);
    expect(combine(0.12345, 0.5, 0.25)).toEqual({ score: 0.2114, similarity: 0.1235, price_alignment: 0.5, quality_score: 0.25 });
  });

  it("names the shared terms in the demand's words, concepts in Chinese for a Chinese reader, at most five", () => {
    const capability = storedVectorOf({ title: 'Contract translation', description: 'Translate contracts and invoices into Chinese' });
    const english = sharedTerms(termsOf('translate my invoices'), capability, 'en');
    expect(english).toContain('invoices');
    expect(english).toContain('translate');
    const chinese = sharedTerms(termsOf('translate my invoices'), capability, 'zh');
    expect(chinese.some((term) => /[\u3400-\u9fff]/.test(term))).toBe(true);
    expect(chinese).toContain('invoices');
    expect(sharedTerms(termsOf('translate contracts invoices chinese english'), capability, 'en', 2)).toHaveLength(2);
    expect(sharedTerms(termsOf('bake bread'), capability, 'en')).toEqual([]);
    // A concept of the demand's that the capability lacks is not shared.
    expect(sharedTerms(termsOf('translate my invoices'), storedVectorOf({ description: 'Logo design' }), 'en')).toEqual([]);
    // The title and each tag are words of their own.
    expect(sharedTerms(termsOf('logo poster design'), storedVectorOf({ title: 'Logo', tags: ['poster', 'design'], description: 'We draw' }), 'en')).toEqual([
      'design',
      'logo',
      'poster',
    ]);
  });

  it('explains each part in one sentence, in English or Chinese, with or without a budget', () => {
    const parts = combine(0.5, 1, 0.8);
    expect(explain({ parts, shared: ['logo', 'design'], price: 1250n, maxPrice: 2000n, currency: 'UT', language: 'en' })).toBe(
      'Overall score 63%. Text similarity 50% (shared terms: logo, design); the price 12.50 UT is within the budget of 20.00 UT; quality 80%.',
    );
    expect(explain({ parts, shared: [], price: 2500n, maxPrice: 2000n, currency: 'UT', language: 'en' })).toBe(
      'Overall score 63%. Text similarity 50% (no shared terms); the price 25.00 UT is above the budget of 20.00 UT; quality 80%.',
    );
    expect(explain({ parts, shared: [], price: 2500n, maxPrice: null, currency: 'CNY', language: 'en' })).toContain(
      'the demand sets no budget; the price is 25.00 CNY',
    );
    expect(explain({ parts, shared: ['设计', '标志'], price: 1250n, maxPrice: 2000n, currency: 'CNY', language: 'zh' })).toBe(
      '综合得分 63%。文本相似度 50%（共同关键词：设计、标志）。价格 12.50 CNY 在预算 20.00 CNY 之内。质量评分 80%。',
    );
    expect(explain({ parts, shared: [], price: 2500n, maxPrice: 2000n, currency: 'CNY', language: 'zh' })).toContain(
      '没有共同关键词）。价格 25.00 CNY 超出预算 20.00 CNY',
    );
    expect(explain({ parts, shared: [], price: 2500n, maxPrice: null, currency: 'CNY', language: 'zh' })).toContain('需求未设预算，价格 25.00 CNY');
    expect(explain({ parts, shared: [], price: 2000n, maxPrice: 2000n, currency: 'UT', language: 'en' })).toContain('within the budget');
    expect(explain({ parts, shared: [], price: 2000n, maxPrice: 2000n, currency: 'CNY', language: 'zh' })).toContain('价格 20.00 CNY 在预算 20.00 CNY 之内');
  });
});

describe('clarity, criterion by criterion', () => {
  const words = (count: number) => Array.from({ length: count }, (_, index) => `word${index}`).join(' ');
  const han = (count: number) => '翻'.repeat(count);

  it('scores length in words for English (25 full, 12 half) and in characters for Chinese (40, 20)', () => {
    const lengthReason = (text: string) => analyseClarity(text).reasons[0];
    expect(analyseClarity(words(12)).score).toBeGreaterThan(analyseClarity(words(11)).score);
    expect(analyseClarity(words(25)).score).toBeGreaterThan(analyseClarity(words(24)).score);
    expect(analyseClarity(han(40)).score).toBeGreaterThan(analyseClarity(han(39)).score);
    expect(analyseClarity(han(20)).score).toBeGreaterThan(analyseClarity(han(19)).score);
    expect(analyseClarity(han(19)).score).toBe(0);
    expect(lengthReason(words(25))).not.toBe(lengthReason(words(24)));
    expect(lengthReason(han(40))).not.toBe(lengthReason(han(39)));
    // Punctuation and spaces are not words.
    expect(analyseClarity(`${words(24)} , . ; !`).score).toBe(analyseClarity(words(24)).score);
    const plain = (count: number) => Array(count).fill('word').join(' ');
    expect(lengthReason(plain(25))).toBe('The description has enough detail to act on.');
    expect(lengthReason(plain(24))).toBe('The description is short: a provider has little to go on.');
  });

  it("lowers the score by 0.05 per vague word, at most 0.2, and quotes each once in the text's language", () => {
    const base = `${words(30)} deliver 3 files as PDF by Friday for 200 dollars, must pass review`;
    const clean = analyseClarity(base).score;
    expect(analyseClarity(`${base} stuff`).score).toBeCloseTo(clean - 0.05, 9);
    expect(analyseClarity(`${base} stuff Stuff nice`).score).toBeCloseTo(clean - 0.1, 9);
    expect(analyseClarity(`${base} stuff nice cool whatever maybe somehow`).score).toBeCloseTo(clean - 0.2, 9);
    const vague = analyseClarity(`${base} stuff nice`);
    expect(vague.reasons.at(-1)).toBe('It uses vague words: "stuff", "nice".');
    expect(vague.suggestions.at(-1)).toBe('Replace "stuff", "nice" with the specific thing, amount or standard you mean.');
    const chinese = analyseClarity(`${han(45)}一些东西`);
    expect(chinese.reasons.at(-1)).toBe('含有模糊用语：“一些”、“东西”。');
    expect(chinese.suggestions.at(-1)).toBe('把“一些”、“东西”换成具体的内容、数量或标准。');
    expect(analyseClarity(base).reasons.join(' ')).not.toContain('vague');
  });

  it('reads English patterns in a Chinese text too, and tells the language only by Han characters against Latin words', () => {
    expect(detectLanguage('翻译 PDF')).toBe('zh');
    expect(detectLanguage('翻 PDF file')).toBe('en');
    expect(detectLanguage('翻 PDF')).toBe('zh');
    expect(analyseClarity('做 PPT。').language).toBe('zh');
    expect(detectLanguage('12345 !!')).toBe('en');
    expect(detectLanguage('')).toBe('en');
    const mixed = unmetCriteria(`${han(45)} PDF`);
    expect(mixed.language).toBe('zh');
    expect(mixed.names).not.toContain('format');
  });

  it('lists the unmet criteria by name, never length', () => {
    const vague = unmetCriteria('  ');
    expect(vague.names).not.toContain('length');
    expect(vague.names.length).toBeGreaterThan(3);
    const precise = unmetCriteria(`${words(30)} deliver 3 files as PDF by Friday for 200 dollars, must pass review`);
    expect(precise.names.length).toBeLessThan(vague.names.length);
    // Each criterion answers with one reason, met or not, in order.
    expect(analyseClarity(`${words(30)} deliver 3 files as PDF by Friday for 200 dollars, must pass review`)).toEqual({
      score: 0.8,
      language: 'en',
      reasons: [
        'The description has enough detail to act on.',
        'It does not say what exactly should be delivered.',
        'It gives a quantity or size.',
        'It specifies a format.',
        'It sets a deadline.',
        'It states a budget.',
        'It says how the result will be judged.',
      ],
      suggestions: ['Name the deliverable, e.g. "a 5-page landing page" or "a cleaned CSV file".'],
    });
    expect(unmetCriteria(words(2)).language).toBe('en');
  });
});

describe('pricing suggestion arithmetic', () => {
  const observed = (...pairs: [bigint, number][]) => pairs.map(([price, weight]) => ({ price, weight }));

  it('picks weighted nearest-rank percentiles from prices in any order', () => {
    const prices = observed([500n, 1], [100n, 1], [300n, 1], [200n, 1], [400n, 1]);
    expect(percentilesOf(prices)).toEqual({ p25: 200n, p50: 300n, p75: 400n });
    expect(weightedPercentile(observed([100n, 1], [900n, 3]), 25)).toBe(100n);
    expect(weightedPercentile(observed([100n, 1], [900n, 3]), 26)).toBe(900n);
    expect(weightedPercentile(observed([300n, 1], [300n, 1], [100n, 2]), 50)).toBe(100n);
    expect(weightedPercentile(observed([100n, 1], [200n, 1]), 100)).toBe(200n);
    expect(percentilesOf([])).toBeNull();
    expect(() => weightedPercentile([], 50)).toThrow('no observations');
  });

  it('takes words of three letters or more without stop words, and Chinese pairs (a lone character whole)', () => {
    expect([...wordsOf('Translate THE contracts, an API for you 3d x1y')]).toEqual(['translate', 'contracts', 'api', 'x1y']);
    expect([...wordsOf('翻译合同 好')]).toEqual(['翻译', '译合', '合同', '好']);
    expect([...wordsOf('')]).toEqual([]);
  });

  it('weighs a listing 1 plus the words it shares with the description, at most 5 of them', () => {
    const description = wordsOf('translate contracts invoices reports letters manuals');
    expect(overlapWeight(description, 'bake bread')).toBe(1);
    expect(overlapWeight(description, 'translate contracts')).toBe(3);
    expect(overlapWeight(description, 'translate contracts invoices reports letters manuals')).toBe(6);
    expect(overlapWeight(new Set(), 'translate contracts')).toBe(1);
  });

  it('turns a settled total into its unit price by the pricing model', () => {
    expect(unitPriceOf(1000n, 'per_hour', 4)).toBe(250n);
    expect(unitPriceOf(1000n, 'per_day', 48)).toBe(500n);
    expect(unitPriceOf(1000n, 'per_day', 49)).toBe(333n);
    expect(unitPriceOf(1000n, 'per_day', 1)).toBe(1000n);
    expect(unitPriceOf(1000n, 'per_use', 4)).toBe(1000n);
    expect(unitPriceOf(1000n, 'per_hour', null)).toBe(1000n);
    expect(unitPriceOf(1000n, 'per_hour', 0)).toBe(1000n);
    expect(unitPriceOf(1000n, 'per_hour', 1)).toBe(1000n);
  });

  it('converts the documented CNY ranges to UT exactly at the configured rate, rounding down', () => {
    expect(cnyToUt(1000n, '0.10')).toBe(10_000n);
    expect(cnyToUt(1000n, '2')).toBe(500n);
    expect(cnyToUt(1000n, '1.5')).toBe(666n);
    expect(cnyToUt(1000n, '0.1234567')).toBe(8100n); // the rate is read to six decimals: 0.123456
    expect(cnyToUt(1000n, '0')).toBe(1000n);
    expect(defaultRange('per_hour', 'CNY', '0.10')).toEqual({ p25: 5_000n, p50: 10_000n, p75: 20_000n });
    expect(defaultRange(undefined, 'UT', '2')).toEqual({ p25: 500n, p50: 1_500n, p75: 5_000n });
  });
});

describe('demand states', () => {
  it('reads an open demand as expired from the exact instant its expires_at passes, and nothing else', () => {
    const at = new Date('2026-11-24T12:00:00.000Z');
    expect(effectiveStatus('open', '2026-11-24T12:00:00.000Z', at)).toBe('expired');
    expect(effectiveStatus('open', new Date(at.getTime() + 1), at)).toBe('open');
    expect(effectiveStatus('open', null, at)).toBe('open');
    expect(effectiveStatus('cancelled', '2020-01-01T00:00:00.000Z', at)).toBe('cancelled');
    expect(effectiveStatus('fulfilled', '2020-01-01T00:00:00.000Z', at)).toBe('fulfilled');
  });

  it('refuses to cancel or match anything but an open demand, with 4090 naming both', () => {
    expect(() => requireOpen('open', 'match')).not.toThrow();
    let refusal: unknown;
    try {
      requireOpen('expired', 'cancel');
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: 4090, message: 'cannot cancel a demand that is expired', data: { status: 'expired', action: 'cancel' } });
  });
});

describe('the built-in description optimiser', () => {
  it('tidies white space and blank lines, and adds a labelled blank for each missing part, listing each change', () => {
    const result = optimizeDescription('  Need   a logo\t for my shop \n\n\n\nthanks  ');
    expect(result.language).toBe('en');
    expect(result.optimized_description.startsWith('Need a logo for my shop\n\nthanks\n\n')).toBe(true);
    expect(result.optimized_description).toContain('Deadline: [when you need it: a date or a number of days]');
    expect(result.optimized_description).toContain('Budget: [amount or range]');
    expect(result.optimized_description).not.toContain('Deliverable:');
    expect(result.changes[0]).toBe('tidied extra spaces and blank lines');
    expect(result.changes).toContain('added a line for the budget');
    expect(result.changes).not.toContain('added a line for the deliverable');
    expect(optimizeDescription('\n  Need   a logo\n').optimized_description).toBe(
      'Need a logo\n\nQuantity: [how many, or how much]\nFormat: [file type or form of the delivery]\nDeadline: [when you need it: a date or a number of days]\nBudget: [amount or range]\nAcceptance: [how you will check the delivery]',
    );
  });

  it('answers in Chinese for a Chinese text, and changes nothing in a complete, tidy one', () => {
    const chinese = optimizeDescription('设计一个标志');
    expect(chinese.language).toBe('zh');
    expect(chinese.optimized_description).toContain('预算：【金额或范围】');
    expect(chinese.changes).toContain('补充了“预算”一行');
    expect(chinese.changes).not.toContain('整理了多余的空格和空行');
    expect(optimizeDescription('设计  一个标志').changes[0]).toBe('整理了多余的空格和空行');
    const complete = 'Design a logo: 3 files as PNG by Friday for 200 dollars; must pass our review.';
    expect(optimizeDescription(complete)).toEqual({ language: 'en', optimized_description: complete, changes: [] });
    const nearlyComplete = 'Design 3 logo files as PNG by Friday for 200 dollars; must pass our review.';
    expect(optimizeDescription(nearlyComplete)).toEqual({
      language: 'en',
      optimized_description: `${nearlyComplete}\n\nQuantity: [how many, or how much]`,
      changes: ['added a line for the quantity'],
    });
  });
});
