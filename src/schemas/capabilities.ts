import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { pricingModels } from '../domain/pricing.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput } from './money.ts';
import { pageArguments, pageQuery, pagedList } from './pagination.ts';
import { idempotencyKey } from './transactions.ts';

export const capabilityTypes = ['data', 'compute', 'service', 'tool', 'account_sharing', 'knowledge', 'api', 'workflow'] as const;

/**
 * The pricing models whose capability the service itself calls to execute (invoke), so that a
 * callback_url is required: per_query by the specification, and per_use, which the
 * specification also states as required.
 */
export const modelsNeedingCallback: readonly string[] = ['per_query', 'per_use'];
export const callbackRequirement = 'required for a per_query or per_use capability';

const title = z.string().trim().min(1).max(limits.capabilityTitleLengthMax);
const description = z.string().trim().min(1).max(limits.capabilityDescriptionLengthMax);
const category = z.enum(categoryCodes);
const capabilityType = z.enum(capabilityTypes);
const pricingModel = z.enum(pricingModels);
const tags = z.array(z.string().trim().min(1).max(limits.capabilityTagLengthMax)).max(limits.capabilityTagsMax);
const deliveryMode = z.enum(['instant', 'async']);
const dailyLimit = z.number().int().min(1).max(limits.capabilityDailyLimitMax);
const ratePerMinute = z.number().int().min(1).max(limits.capabilityRatePerMinuteMax);
const callbackUrl = z.url({ protocol: /^https?$/ }).max(limits.urlLengthMax);
const callbackTimeout = z.number().int().min(limits.callbackTimeoutSecondsMin).max(limits.callbackTimeoutSecondsMax);

/** The fields of a capability an owner chooses, as create takes them. */
const createFields = {
  title,
  description,
  category,
  capability_type: capabilityType,
  pricing_model: pricingModel,
  price_ut: amountInput.optional(),
  tags: tags.optional(),
  delivery_mode: deliveryMode.optional(),
  auto_accept_min_ut: amountInput.optional(),
  daily_limit: dailyLimit.optional(),
  rate_limit_per_min: ratePerMinute.optional(),
  callback_url: callbackUrl.optional(),
  callback_timeout_sec: callbackTimeout
    .optional()
    .meta({ description: `${limits.callbackTimeoutSecondsMin} to ${limits.callbackTimeoutSecondsMax}, default ${limits.callbackTimeoutSecondsDefault}` }),
};

const requireCallback = (value: { pricing_model: string; callback_url?: string }, context: z.RefinementCtx) => {
  if (modelsNeedingCallback.includes(value.pricing_model) && !value.callback_url) {
    context.addIssue({ code: 'custom', path: ['callback_url'], message: callbackRequirement });
  }
};

export const createCapabilityBody = z
  .strictObject({ ...createFields, idempotency_key: idempotencyKey.optional() })
  .superRefine(requireCallback)
  .meta({ id: 'CapabilityCreate' });

/** One item of a batch: a create request; the batch as a whole carries the idempotency key. */
export const batchItem = z.strictObject(createFields).superRefine(requireCallback);

/**
 * PUT takes any subset of the create fields plus `available` (a partial update: what is left
 * out stays). The optional settings can be cleared with null. Whether the result still has the
 * callback its pricing model needs is checked against the stored row by the engine.
 */
export const updateCapabilityBody = z
  .strictObject({
    title: title.optional(),
    description: description.optional(),
    category: category.optional(),
    capability_type: capabilityType.optional(),
    pricing_model: pricingModel.optional(),
    price_ut: amountInput.optional(),
    tags: tags.optional(),
    delivery_mode: deliveryMode.optional(),
    auto_accept_min_ut: amountInput.nullable().optional(),
    daily_limit: dailyLimit.nullable().optional(),
    rate_limit_per_min: ratePerMinute.nullable().optional(),
    callback_url: callbackUrl.nullable().optional(),
    callback_timeout_sec: callbackTimeout.optional(),
    available: z.boolean().optional().meta({ description: 'false withdraws the offer (it cannot be bought or matched); true offers it again' }),
  })
  .refine((value) => Object.keys(value).length > 0, { message: 'name at least one field to change' })
  .meta({ id: 'CapabilityUpdate' });

/** The words of a text query, split on white space; each must match on its own. */
export const wordsOf = (text: string) => text.split(/\s+/).filter((word) => word.length > 0);

/** The list's filters, shared by the REST query (listCapabilitiesQuery) and the MCP tool's arguments. */
const listFilters = {
  category: category.optional(),
  capability_type: capabilityType.optional(),
  pricing_model: pricingModel.optional(),
  min_price_ut: amountInput.optional().meta({ description: 'Lowest price_ut, inclusive' }),
  max_price_ut: amountInput.optional().meta({ description: 'Highest price_ut, inclusive' }),
  owner: z
    .union([z.literal('me'), uuid])
    .optional()
    .meta({ description: "`me` or a user id: only that owner's capabilities" }),
  available: z.enum(['true', 'false', 'any']).default('true').meta({
    description: "true (default): offered capabilities; false: the caller's own withdrawn ones; any: both",
  }),
  q: z
    .string()
    .trim()
    .min(1)
    .max(limits.capabilitySearchQueryLengthMax)
    .optional()
    .meta({
      description: `Words (at most ${limits.capabilitySearchWordsMax}) that must each appear, in any case, in the title, description or a tag`,
    }),
};

const listRules = (value: { min_price_ut?: bigint; max_price_ut?: bigint; q?: string }, context: z.RefinementCtx) => {
  if (value.min_price_ut !== undefined && value.max_price_ut !== undefined && value.min_price_ut > value.max_price_ut) {
    context.addIssue({ code: 'custom', path: ['max_price_ut'], message: 'must not be below min_price_ut' });
  }
  if (value.q !== undefined && wordsOf(value.q).length > limits.capabilitySearchWordsMax) {
    context.addIssue({ code: 'custom', path: ['q'], message: `at most ${limits.capabilitySearchWordsMax} words` });
  }
};

export const listCapabilitiesQuery = z.object({ ...listFilters, ...pageQuery }).superRefine(listRules);

/**
 * The same list as JSON arguments (the MCP tool search_capabilities): page and page_size are
 * numbers instead of digit strings; stray arguments are refused, as every tool's are.
 */
export const searchCapabilitiesArguments = z.strictObject({ ...listFilters, ...pageArguments }).superRefine(listRules);

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

/**
 * The answer to a create: the capability plus its callback secret, which is shown here and by a
 * rotation only. The owner verifies invoke callbacks with it (decisions section 7).
 */
export const createdCapabilityResponse = capabilityResponse
  .extend({ callback_secret: z.string().meta({ description: 'Signs invoke callbacks (X-Marketplace-Signature). Shown only in this answer: store it now.' }) })
  .meta({ id: 'CreatedCapability' });

export const rotatedSecretResponse = z.object({ capability_id: uuid, callback_secret: z.string(), rotated_at: dateTime }).meta({ id: 'RotatedCallbackSecret' });

export const deletedCapabilityResponse = z.object({ id: uuid, deleted: z.literal(true), deleted_at: dateTime }).meta({ id: 'DeletedCapability' });

export const capabilityList = pagedList(capabilityResponse).meta({ id: 'CapabilityList' });

export const batchCapabilityBody = z
  .strictObject({
    items: z
      .array(z.unknown())
      .min(1)
      .max(limits.capabilityBatchItemsMax)
      .meta({
        description: `1 to ${limits.capabilityBatchItemsMax} CapabilityCreate objects (without idempotency_key); each is validated on its own`,
      }),
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'CapabilityBatch' });

/** A failed item's error: the `{code, message, data}` of the envelope a single create would answer. */
const itemError = z.object({ code: z.number().int(), message: z.string(), data: z.record(z.string(), z.unknown()).nullable() });

export const batchCapabilityResponse = z
  .object({
    total: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    results: z.array(z.object({ index: z.number().int(), success: z.boolean(), data: createdCapabilityResponse.optional(), error: itemError.optional() })),
  })
  .meta({ id: 'CapabilityBatchResult' });

export const capabilityIdParams = z.object({ cap_id: uuid });
export type CreateCapabilityInput = Omit<z.output<typeof createCapabilityBody>, 'idempotency_key'>;
export type UpdateCapabilityInput = z.output<typeof updateCapabilityBody>;
export type ListCapabilitiesInput = z.output<typeof listCapabilitiesQuery>;
export type CapabilityView = z.infer<typeof capabilityResponse>;
export type CreatedCapabilityView = z.infer<typeof createdCapabilityResponse>;
export type RotatedSecretView = z.infer<typeof rotatedSecretResponse>;
export type DeletedCapabilityView = z.infer<typeof deletedCapabilityResponse>;
export type CapabilityListView = z.infer<typeof capabilityList>;
export type BatchCapabilityView = z.infer<typeof batchCapabilityResponse>;
