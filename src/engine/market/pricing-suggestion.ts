import type { AiProvider } from '../../ai/provider.ts';
import { detectLanguage } from '../../domain/clarity.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import {
  type Percentiles,
  type PriceObservation,
  defaultRange,
  overlapWeight,
  percentilesOf,
  settledWeightFactor,
  unitPriceOf,
  wordsOf,
} from '../../domain/pricing-suggestion.ts';
import { limits } from '../../limits.ts';
import type { PricingSuggestion, PricingSuggestionInput } from '../../schemas/pricing.ts';
import { listedPrices, settledPrices } from '../../store/pricing.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/**
 * GET /pricing/suggestion (issue 9 point 5): a price from the marketplace's own data in the
 * caller's space only. The suggestion is the weighted median of listed prices (available
 * capabilities) and settled unit prices in the category, the range their weighted p25..p75; an
 * empty market answers a documented default, labelled `no_market_data`. A configured language
 * model may add an explanation, never an amount.
 */
export function createPricingSuggestionEngine({ db, config }: EngineDependencies, ai: AiProvider) {
  async function suggest(principal: Principal, input: PricingSuggestionInput, signal?: AbortSignal): Promise<PricingSuggestion> {
    const space = principal.caller_type;
    const currency = currencyOfSpace(space);
    const scope = { space, category: input.category, pricingModel: input.pricing_model };
    const [listed, settled] = await Promise.all([listedPrices(db, scope), settledPrices(db, scope)]);
    const descriptionWords = wordsOf(input.description ?? '');
    const listedObservations: PriceObservation[] = listed.map((row) => ({
      price: BigInt(row.price),
      weight: overlapWeight(descriptionWords, `${row.title} ${row.description}`),
    }));
    const settledObservations: PriceObservation[] = settled.map((row) => ({
      price: unitPriceOf(BigInt(row.price), row.transaction_type, row.booked_hours),
      weight: settledWeightFactor * overlapWeight(descriptionWords, `${row.title} ${row.description}`),
    }));
    const combined = percentilesOf([...listedObservations, ...settledObservations]);
    const range = combined ?? defaultRange(input.pricing_model, currency, config.UT_TO_CNY_RATE);
    const basis = !combined
      ? 'no_market_data'
      : listed.length && settled.length
        ? 'listed_and_settled_prices'
        : listed.length
          ? 'listed_prices'
          : 'settled_prices';
    const suggestion: PricingSuggestion = {
      category: input.category,
      pricing_model: input.pricing_model ?? null,
      currency,
      suggested_price_ut: formatAmount(range.p50),
      range: { p25_ut: formatAmount(range.p25), p75_ut: formatAmount(range.p75) },
      sample_size: listed.length + settled.length,
      samples: {
        // Per source without weights, so each can be checked against the plain data.
        listed_capabilities: statistics(listedObservations),
        settled_transactions: statistics(settledObservations),
      },
      basis,
      basis_detail: basisDetail(basis, listed.length, settled.length, input, currency, descriptionWords.size > 0),
      description_weighted: descriptionWords.size > 0 && basis !== 'no_market_data',
      explanation: null,
    };
    return { ...suggestion, explanation: await explanation(suggestion, input.description, signal) };
  }

  /** One short paragraph from the model, in the description's language; null when there is no model. */
  async function explanation(suggestion: PricingSuggestion, description: string | undefined, signal?: AbortSignal): Promise<string | null> {
    const language = detectLanguage(description ?? '') === 'zh' ? 'Simplified Chinese' : 'English';
    const { explanation: _none, ...facts } = suggestion;
    const answer = await ai.chat(
      [
        {
          role: 'system',
          content: `Explain this marketplace pricing suggestion to a seller in one short paragraph in ${language}. Use only the amounts given; do not invent others.`,
        },
        { role: 'user', content: JSON.stringify({ ...facts, description: description ?? null }) },
      ],
      { purpose: 'pricing explanation', temperature: 0, signal },
    );
    const text = answer?.trim().slice(0, limits.aiExplanationLengthMax);
    return text ? text : null;
  }

  return { suggest };
}

function statistics(observations: PriceObservation[]) {
  const plain = percentilesOf(observations.map((item) => ({ price: item.price, weight: 1 })));
  const format = (pick: (value: Percentiles) => bigint) => (plain ? formatAmount(pick(plain)) : null);
  return { sample_size: observations.length, p25_ut: format((value) => value.p25), p50_ut: format((value) => value.p50), p75_ut: format((value) => value.p75) };
}

function basisDetail(
  basis: PricingSuggestion['basis'],
  listed: number,
  settled: number,
  input: PricingSuggestionInput,
  currency: string,
  described: boolean,
): string {
  const where = `category ${input.category}${input.pricing_model ? `, pricing model ${input.pricing_model}` : ''}, in ${currency}`;
  if (basis === 'no_market_data') {
    return `No available capability and no settled transaction in ${where}: a default range for the ${input.pricing_model ?? 'per_use'} pricing model, not market data.`;
  }
  const weighting = described ? '; listings sharing words with the description count up to 6 times' : '';
  return `Weighted p25/p50/p75 of ${listed} listed price(s) of available capabilities and ${settled} settled transaction price(s) per unit (each counted twice) in ${where}${weighting}.`;
}
