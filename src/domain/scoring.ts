import { type TextTerms, conceptById, languageOf, termsOf } from './text.ts';
import { formatAmount } from './money.ts';

/**
 * The matching formula (docs/matching.md), pure so that it can be read and tested alone:
 *
 *   score = 0.70 x similarity + 0.20 x price_alignment + 0.10 x quality
 *
 * similarity is the cosine of two term vectors (stemmed English words, Chinese two-character
 * pieces, glossary concepts shared by both languages); title and tags count twice. When an
 * embedding of both texts is available, similarity is the mean of that cosine and the embedding's.
 */
export const scoreWeights = { similarity: 0.7, priceAlignment: 0.2, quality: 0.1 } as const;

/** Term weights inside a text: a concept says most, a Chinese piece (which may straddle words) least. */
const termWeights = { concept: 1.5, word: 1, piece: 0.6 } as const;
const titleFactor = 2;
/** quality_score is a rating from 0 to 5 (0 for a capability nobody has rated yet). */
export const qualityScale = 5;

/**
 * A demand with auto_accept buys the best candidate whose score is at least this, and whose price
 * is within max_price_ut. Chosen from the bilingual fixture (test/fixtures/matching-fixture.ts):
 * every expected best match there scores above it.
 */
export const autoAcceptScoreMin = 0.5;

/**
 * A newly offered capability is news to a demand's owner (`demand.matched`) from the same score:
 * a match good enough to buy on the owner's behalf is good enough to tell them of, and a lower
 * bar would send every loosely related offer.
 */
export const demandMatchedScoreMin = autoAcceptScoreMin;

export type TermVector = Map<string, number>;

export interface MatchText {
  title?: string | null;
  description: string;
  tags?: readonly string[] | null;
}

function addText(vector: TermVector, text: string, factor: number) {
  const terms = termsOf(text);
  const add = (term: string, weight: number) => vector.set(term, (vector.get(term) ?? 0) + weight * factor);
  for (const word of terms.words) add(`w:${word}`, termWeights.word);
  for (const piece of terms.pieces) add(`p:${piece}`, termWeights.piece);
  for (const concept of terms.concepts.keys()) add(`c:${concept}`, termWeights.concept);
}

export function vectorOf(text: MatchText): TermVector {
  const vector: TermVector = new Map();
  addText(vector, `${text.title ?? ''} ${(text.tags ?? []).join(' ')}`, titleFactor);
  addText(vector, text.description, 1);
  return vector;
}

export function cosine(left: TermVector, right: TermVector): number {
  let dot = 0;
  for (const [term, weight] of left) dot += weight * (right.get(term) ?? 0);
  if (dot === 0) return 0;
  const norm = (vector: TermVector) => Math.sqrt([...vector.values()].reduce((sum, weight) => sum + weight * weight, 0));
  return dot / (norm(left) * norm(right));
}

export function denseCosine(left: readonly number[], right: readonly number[]): number {
  if (left.length === 0 || left.length !== right.length) return 0;
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let index = 0; index < left.length; index++) {
    dot += left[index]! * right[index]!;
    leftNorm += left[index]! ** 2;
    rightNorm += right[index]! ** 2;
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : Math.max(0, dot / Math.sqrt(leftNorm * rightNorm));
}

/** 1 within budget or without one; above it, budget / price (twice the budget scores 0.5). */
export function priceAlignment(price: bigint, maxPrice: bigint | null): number {
  if (maxPrice === null || price <= maxPrice) return 1;
  return maxPrice === 0n ? 0 : Number((maxPrice * 10_000n) / price) / 10_000;
}

export const normalizedQuality = (quality: number) => Math.min(1, Math.max(0, quality / qualityScale));

export interface ScoreParts {
  score: number;
  similarity: number;
  price_alignment: number;
  quality_score: number;
}

const rounded = (value: number) => Math.round(value * 10_000) / 10_000;

export function combine(similarity: number, alignment: number, quality: number): ScoreParts {
  const score = scoreWeights.similarity * similarity + scoreWeights.priceAlignment * alignment + scoreWeights.quality * quality;
  return { score: rounded(score), similarity: rounded(similarity), price_alignment: rounded(alignment), quality_score: rounded(quality) };
}

/** Similarity with an embedding cosine when one is known (null: lexical only). */
export const blendedSimilarity = (lexical: number, embedding: number | null) => (embedding === null ? lexical : (lexical + embedding) / 2);

/** What the two texts share, in the demand's words where it can: for the explanation. */
export function sharedTerms(demandTerms: TextTerms, capability: { terms: readonly (readonly [string, number])[] }, language: 'zh' | 'en', max = 5): string[] {
  // The capability's side is its stored term vector (domain/term-vectors.ts): its text is not read again.
  const capabilityTerms = new Set(capability.terms.map(([term]) => term));
  const shared = new Set<string>();
  for (const [concept, surface] of demandTerms.concepts) {
    if (!capabilityTerms.has(`c:${concept}`)) continue;
    const entry = conceptById.get(concept)!;
    shared.add(language === 'zh' && /[a-z]/.test(surface) ? entry.chinese[0]! : surface);
  }
  demandTerms.rawWords.forEach((word, index) => capabilityTerms.has(`w:${demandTerms.words[index]!}`) && shared.add(word));
  return [...shared].slice(0, max);
}

export interface ExplanationInput {
  parts: ScoreParts;
  shared: string[];
  price: bigint;
  maxPrice: bigint | null;
  currency: string;
  language: 'zh' | 'en';
}

/** One sentence per score part, in the demand's language. */
export function explain({ parts, shared, price, maxPrice, currency, language }: ExplanationInput): string {
  const percent = (value: number) => `${Math.round(value * 100)}%`;
  const priceText = `${formatAmount(price)} ${currency}`;
  const budgetText = maxPrice === null ? null : `${formatAmount(maxPrice)} ${currency}`;
  if (language === 'zh') {
    const terms = shared.length > 0 ? `共同关键词：${shared.join('、')}` : '没有共同关键词';
    const budget =
      budgetText === null
        ? `需求未设预算，价格 ${priceText}`
        : price <= maxPrice!
          ? `价格 ${priceText} 在预算 ${budgetText} 之内`
          : `价格 ${priceText} 超出预算 ${budgetText}`;
    return `综合得分 ${percent(parts.score)}。文本相似度 ${percent(parts.similarity)}（${terms}）。${budget}。质量评分 ${percent(parts.quality_score)}。`;
  }
  const terms = shared.length > 0 ? `shared terms: ${shared.join(', ')}` : 'no shared terms';
  const budget =
    budgetText === null
      ? `the demand sets no budget; the price is ${priceText}`
      : price <= maxPrice!
        ? `the price ${priceText} is within the budget of ${budgetText}`
        : `the price ${priceText} is above the budget of ${budgetText}`;
  return `Overall score ${percent(parts.score)}. Text similarity ${percent(parts.similarity)} (${terms}); ${budget}; quality ${percent(parts.quality_score)}.`;
}

export { languageOf };
