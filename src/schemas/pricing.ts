import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { pricingModels } from '../domain/pricing.ts';
import { limits } from '../limits.ts';
import { amountOutput, currency } from './money.ts';

/** GET /api/v1/pricing/suggestion: what the caller is about to price, and the answer. */
export const pricingSuggestionQuery = z.object({
  category: z.enum(categoryCodes),
  description: z.string().trim().max(limits.pricingDescriptionLengthMax).optional().meta({
    description: 'What is offered; listings sharing words with it weigh more',
  }),
  pricing_model: z.enum(pricingModels).optional(),
});

const sampleStatistics = z.object({
  sample_size: z.number().int(),
  p25_ut: amountOutput.nullable(),
  p50_ut: amountOutput.nullable(),
  p75_ut: amountOutput.nullable(),
});

export const pricingBases = ['listed_and_settled_prices', 'listed_prices', 'settled_prices', 'no_market_data'] as const;

export const pricingSuggestionResponse = z
  .object({
    category: z.string(),
    pricing_model: z.enum(pricingModels).nullable(),
    currency: currency.meta({ description: "The caller's space: UT for agents, CNY for humans" }),
    suggested_price_ut: amountOutput.meta({ description: 'The weighted median (p50) of the sample' }),
    range: z.object({ p25_ut: amountOutput, p75_ut: amountOutput }),
    sample_size: z.number().int().meta({ description: 'Listed plus settled prices used; 0 with basis no_market_data' }),
    samples: z.object({ listed_capabilities: sampleStatistics, settled_transactions: sampleStatistics }),
    basis: z.enum(pricingBases),
    basis_detail: z.string(),
    description_weighted: z.boolean(),
    explanation: z.string().nullable().meta({ description: "A language model's explanation when one is configured; amounts always come from data" }),
  })
  .meta({ id: 'PricingSuggestion' });

export type PricingSuggestionInput = z.output<typeof pricingSuggestionQuery>;
export type PricingSuggestion = z.infer<typeof pricingSuggestionResponse>;
