import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { demandStatuses, demandTypes } from '../domain/demands.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';
import { pageQuery, pagedList } from './pagination.ts';
import { idempotencyKey } from './transactions.ts';

export const createDemandBody = z
  .strictObject({
    description: z.string().trim().min(1).max(limits.demandDescriptionLengthMax),
    title: z.string().trim().min(1).max(limits.demandTitleLengthMax).optional().meta({ description: 'Optional short title; weighs twice in matching' }),
    category: z.enum(categoryCodes).optional(),
    tags: z
      .array(z.string().trim().min(1).max(limits.capabilityTagLengthMax))
      .max(limits.capabilityTagsMax)
      .optional()
      .meta({ description: 'Optional keywords; weigh twice in matching' }),
    max_price_ut: amountInput.optional().meta({ description: "Budget in the caller's currency (UT for agents, CNY for humans)" }),
    auto_accept: z.boolean().optional().meta({
      description: 'Buy (create and freeze) the first match that scores at least the documented threshold within max_price_ut, which is then required',
    }),
    demand_type: z.enum(demandTypes).optional(),
    expires_at: dateTime
      .optional()
      .meta({ description: 'After this instant the demand is expired: it no longer matches. Must be after the current time (else 4000 at body.expires_at)' }),
    idempotency_key: idempotencyKey.optional(),
  })
  .superRefine((value, context) => {
    if (value.auto_accept && value.max_price_ut === undefined) {
      context.addIssue({ code: 'custom', path: ['max_price_ut'], message: 'required when auto_accept is true' });
    }
  })
  .meta({ id: 'DemandCreate' });

export const demandResponse = z
  .object({
    id: uuid,
    user_id: uuid.meta({ description: 'The requester, from the credentials' }),
    owner_type: z.enum(['agent', 'human']),
    title: z.string().nullable(),
    description: z.string(),
    category: z.string().nullable(),
    tags: z.array(z.string()),
    max_price_ut: amountOutput.nullable(),
    currency,
    auto_accept: z.boolean(),
    demand_type: z.enum(demandTypes),
    status: z.enum(demandStatuses),
    expires_at: dateTime.nullable(),
    transaction_id: uuid.nullable().meta({ description: 'The transaction auto_accept created (status fulfilled)' }),
    auto_accept_failure: z
      .object({
        code: z.number().int().meta({ description: 'The refusal: 4020 not enough money, 4093 the price above max_price_ut, 4291 the daily limit, ...' }),
        message: z.string(),
        data: z.record(z.string(), z.unknown()).nullable().meta({ description: 'As the refusal says it, e.g. {currency, available, required} for 4020' }),
        capability_id: uuid.meta({ description: 'The capability it tried to buy' }),
        at: dateTime,
      })
      .nullable()
      .meta({ description: 'Why auto_accept could not buy the last time it tried (the demand stays open); null once it bought or when it never failed' }),
    cancelled_at: dateTime.nullable(),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'Demand' });

export const demandIdParams = z.object({ demand_id: uuid });

export const listDemandsQuery = z.object({
  status: z.enum(demandStatuses).optional(),
  ...pageQuery,
});

export const demandList = pagedList(demandResponse).meta({ id: 'DemandList' });

export type CreateDemandInput = Omit<z.output<typeof createDemandBody>, 'idempotency_key'>;
export type DemandView = z.infer<typeof demandResponse>;
export type ListDemandsInput = z.output<typeof listDemandsQuery>;
export const cancelDemandBody = z.strictObject({ idempotency_key: idempotencyKey.optional() });

/** evaluate-clarity reads and stores nothing, so it takes no idempotency key; a body is optional. */
export const evaluateClarityBody = z.strictObject({}).meta({ id: 'EvaluateClarityRequest' });

export const clarityResponse = z
  .object({
    demand_id: uuid,
    score: z.number().min(0).max(1).meta({ description: 'How clearly the demand says what is wanted, 0..1 (docs/decisions/matching.md, "Clarity")' }),
    language: z.enum(['zh', 'en']).meta({ description: "The demand's language, told by script; reasons and suggestions are in it" }),
    reasons: z.array(z.string()),
    suggestions: z.array(z.string()).meta({ description: 'Concrete additions that would make the demand clearer' }),
    basis: z.enum(['built_in', 'llm']).meta({ description: 'built_in: the deterministic analyser; llm: the configured model answered' }),
  })
  .meta({ id: 'ClarityEvaluation' });
