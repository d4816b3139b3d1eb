import type { MinorUnits } from './money.ts';
import type { PricingModel } from './pricing.ts';

/**
 * The arithmetic of the pricing suggestion (docs/decisions/matching.md "Pricing
 * suggestion"). Amounts are integer minor units (bigint) throughout; weights are small
 * integers, so every percentile is one of the observed prices, picked with integer comparisons.
 */
export interface PriceObservation {
  price: MinorUnits;
  /** How many times this price counts (1 + shared words, doubled for a settled price). */
  weight: number;
}

export interface Percentiles {
  p25: MinorUnits;
  p50: MinorUnits;
  p75: MinorUnits;
}

/**
 * The weighted nearest-rank percentile: the smallest observed price whose cumulative weight
 * reaches `percent` of the total weight. With all weights 1 this is PostgreSQL's
 * percentile_disc(percent / 100).
 */
export function weightedPercentile(observations: readonly PriceObservation[], percent: number): MinorUnits {
  if (observations.length === 0) throw new Error('no observations');
  const sorted = [...observations].sort((a, b) => (a.price < b.price ? -1 : a.price > b.price ? 1 : 0));
  const total = sorted.reduce((sum, item) => sum + item.weight, 0);
  let cumulative = 0;
  for (const item of sorted) {
    cumulative += item.weight;
    if (cumulative * 100 >= percent * total) return item.price;
  }
  return sorted[sorted.length - 1]!.price;
}

export function percentilesOf(observations: readonly PriceObservation[]): Percentiles | null {
  if (observations.length === 0) return null;
  return { p25: weightedPercentile(observations, 25), p50: weightedPercentile(observations, 50), p75: weightedPercentile(observations, 75) };
}

/** Settled prices are what buyers actually paid, so each counts as much as two listings. */
export const settledWeightFactor = 2;
/** A listing sharing words with the description counts 1 + shared words, up to this many. */
export const sharedWordsCountedMax = 5;

const stopWords = new Set([
  'the',
  'and',
  'for',
  'with',
  'that',
  'this',
  'from',
  'are',
  'you',
  'your',
  'our',
  'will',
  'can',
  'need',
  'want',
  'please',
  'into',
  'about',
  'have',
  'has',
]);

/**
 * The words of a text for overlap: English (Latin) words of three letters or more that are not
 * stop words, lower-cased, and each pair of adjacent Han characters (Chinese has no spaces;
 * bigrams are the usual unit of word overlap for it).
 */
export function wordsOf(text: string): Set<string> {
  const words = new Set<string>();
  for (const word of text.toLowerCase().match(/[a-z][a-z0-9]{2,}/g) ?? []) if (!stopWords.has(word)) words.add(word);
  for (const run of text.match(/\p{Script=Han}+/gu) ?? []) {
    const characters = [...run];
    if (characters.length === 1) words.add(run);
    for (let index = 0; index + 1 < characters.length; index += 1) words.add(characters[index]! + characters[index + 1]!);
  }
  return words;
}

/** 1 for a listing that shares nothing with the description (or when there is none), up to 1 + 5. */
export function overlapWeight(descriptionWords: ReadonlySet<string>, listingText: string): number {
  if (descriptionWords.size === 0) return 1;
  let shared = 0;
  for (const word of wordsOf(listingText)) if (descriptionWords.has(word)) shared += 1;
  return 1 + Math.min(shared, sharedWordsCountedMax);
}

/** A settled transaction's price per unit of its capability's pricing model (decisions section 4). */
export function unitPriceOf(total: MinorUnits, model: string, bookedHours: number | null): MinorUnits {
  if (bookedHours === null || bookedHours < 1) return total;
  if (model === 'per_hour') return total / BigInt(bookedHours);
  if (model === 'per_day') return total / BigInt(Math.ceil(bookedHours / 24));
  return total;
}

/**
 * What an empty market answers: a documented range per pricing model, in CNY minor units, the
 * middle as the suggestion. Agent (UT) prices are the same amounts at the configured UT_TO_CNY_RATE.
 */
export const defaultRangesCny: Readonly<Record<PricingModel, Percentiles>> = {
  per_use: { p25: 1_000n, p50: 3_000n, p75: 10_000n },
  per_query: { p25: 10n, p50: 50n, p75: 200n },
  per_hour: { p25: 5_000n, p50: 10_000n, p75: 20_000n },
  per_day: { p25: 30_000n, p50: 80_000n, p75: 150_000n },
  subscription: { p25: 3_000n, p50: 10_000n, p75: 30_000n },
};

/** CNY minor units to UT minor units at "CNY per UT" (e.g. "0.10"), exactly, rounding down. */
export function cnyToUt(amount: MinorUnits, rate: string): MinorUnits {
  const [whole = '0', fraction = ''] = rate.split('.');
  const rateMicros = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
  return rateMicros === 0n ? amount : (amount * 1_000_000n) / rateMicros;
}

export function defaultRange(model: PricingModel | undefined, currency: 'UT' | 'CNY', rate: string): Percentiles {
  const range = defaultRangesCny[model ?? 'per_use'];
  if (currency === 'CNY') return range;
  return { p25: cnyToUt(range.p25, rate), p50: cnyToUt(range.p50, rate), p75: cnyToUt(range.p75, rate) };
}
