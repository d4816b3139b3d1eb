import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { pricingModels } from '../domain/pricing.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput } from './money.ts';
import { idempotencyKey } from './transactions.ts';

export const capabilityTypes = ['data', 'compute', 'service', 'tool', 'account_sharing', 'knowledge', 'api', 'workflow'] as const;

export const createCapabilityBody = z
  .strictObject({
    title: z.string().trim().min(1).max(limits.capabilityTitleLengthMax),
    description: z.string().trim().min(1).max(limits.capabilityDescriptionLengthMax),
    category: z.enum(categoryCodes),
    capability_type: z.enum(capabilityTypes),
    pricing_model: z.enum(pricingModels),
    price_ut: amountInput.optional(),
    tags: z.array(z.string().trim().min(1).max(limits.capabilityTagLengthMax)).max(limits.capabilityTagsMax).optional(),
    delivery_mode: z.enum(['instant', 'async']).optional(),
    auto_accept_min_ut: amountInput.optional(),
    daily_limit: z.number().int().min(1).max(limits.capabilityDailyLimitMax).optional(),
    rate_limit_per_min: z.number().int().min(1).max(limits.capabilityRatePerMinuteMax).optional(),
    callback_url: z.url({ protocol: /^https?$/ }).max(limits.urlLengthMax).optional(),
    callback_timeout_sec: z.number().int().min(limits.callbackTimeoutSecondsMin).max(limits.callbackTimeoutSecondsMax).optional(),
    idempotency_key: idempotencyKey.optional(),
  })
  .superRefine((value, context) => {
    if (value.pricing_model === 'per_query' && !value.callback_url) {
      context.addIssue({ code: 'custom', path: ['callback_url'], message: 'required for a per_query capability' });
    }
  })
  .meta({ id: 'CapabilityCreate' });

export const capabilityResponse = z
  .object({
    id: uuid,
    agent_id: uuid,
    owner_type: z.enum(['agent', 'human']),
    title: z.string(),
    description: z.string(),
    category: z.string(),
    tags: z.array(z.string()),
    capability_type: z.string(),
    delivery_mode: z.string(),
    pricing_model: z.string(),
    price_ut: amountOutput,
    currency: z.enum(['UT', 'CNY']),
    auto_accept_min_ut: amountOutput.nullable(),
    daily_limit: z.number().int().nullable(),
    rate_limit_per_min: z.number().int().nullable(),
    callback_timeout_sec: z.number().int(),
    quality_score: z.string(),
    total_sold: z.number().int(),
    available: z.boolean(),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'Capability' });

export const capabilityIdParams = z.object({ cap_id: uuid });
export type CreateCapabilityInput = Omit<z.output<typeof createCapabilityBody>, 'idempotency_key'>;
export type CapabilityView = z.infer<typeof capabilityResponse>;
