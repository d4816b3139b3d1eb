import { z } from 'zod';
import { transactionStatuses } from '../domain/escrow.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';
import { pageQuery, pagedList } from './pagination.ts';

export const idempotencyKey = z
  .string()
  .min(1)
  .max(limits.idempotencyKeyLengthMax)
  .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces');

/**
 * The buyer's ceiling (docs/decisions/money-and-escrow.md "Price ceilings"): the most this purchase may cost. A
 * price above it is refused with 4093 and nothing is frozen or charged. Without it a repeat buyer
 * is held to the unit price it paid last time.
 */
export const maxPriceInput = amountInput.optional().meta({
  description:
    'The most you agree to pay, e.g. "0.10" (the price you were shown). A higher price is refused with 4093 price_above_ceiling and nothing is charged. Without it, a capability you bought before is refused with 4093 if its price rose since.',
  examples: ['0.10'],
});

export const createTransactionBody = z
  .strictObject({
    capability_id: uuid,
    demand_id: uuid.optional(),
    context_id: uuid.optional(),
    booked_hours: z.number().int().min(limits.bookedHoursMin).max(limits.bookedHoursMax).optional(),
    input: z.record(z.string(), z.unknown()).optional().meta({ description: 'Input for the seller (what A2A clients send in a data part)' }),
    note: z.string().trim().min(1).max(limits.noteLengthMax).optional(),
    max_price: maxPriceInput,
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'TransactionCreate' });

export const resultPayload = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= limits.resultPayloadBytesMax, `must be at most ${limits.resultPayloadBytesMax} bytes`);

export const deliverBody = z.strictObject({ result_payload: resultPayload, idempotency_key: idempotencyKey.optional() }).meta({ id: 'DeliverRequest' });
export const actionBody = z.strictObject({ idempotency_key: idempotencyKey.optional() });
export const disputeBody = z.strictObject({
  reason: z.string().trim().min(1).max(limits.noteLengthMax).optional(),
  idempotency_key: idempotencyKey.optional(),
});
export const resolveBody = z.strictObject({ outcome: z.enum(['settle', 'refund']), idempotency_key: idempotencyKey.optional() }).meta({ id: 'ResolveRequest' });

export const transactionResponse = z
  .object({
    id: uuid,
    buyer_user_id: uuid,
    seller_user_id: uuid,
    capability_id: uuid.nullable().meta({ description: 'The capability bought; null for a task (then task_id and skill_id)' }),
    task_id: uuid.nullable().meta({ description: 'The task whose application was accepted (transaction_type "task"), else null' }),
    skill_id: uuid.nullable(),
    demand_id: uuid.nullable(),
    transaction_type: z.string(),
    context_id: uuid,
    price_ut: amountOutput,
    currency,
    booked_hours: z.number().int().nullable(),
    status: z.enum(transactionStatuses),
    result_payload: z.record(z.string(), z.unknown()).nullable(),
    input: z.record(z.string(), z.unknown()).nullable().meta({ description: "The buyer's input for the seller" }),
    note: z.string().nullable().meta({ description: "The buyer's note (A2A text parts)" }),
    dispute_reason: z.string().nullable(),
    frozen_at: dateTime.nullable(),
    accepted_at: dateTime.nullable(),
    delivered_at: dateTime.nullable(),
    confirmed_at: dateTime.nullable(),
    settled_at: dateTime.nullable(),
    delivery_deadline: dateTime.nullable(),
    auto_confirm_at: dateTime.nullable(),
    created_at: dateTime,
    updated_at: dateTime,
  })
  .meta({ id: 'Transaction' });

export const omittedField = z
  .object({ field: z.enum(['input', 'result_payload']), bytes: z.number().int().meta({ description: 'Size of the left-out JSON in bytes' }) })
  .meta({ id: 'OmittedField' });

/**
 * What events carry: the transaction, except that an `input` or `result_payload` larger than
 * limits.eventFieldInlineBytesMax is null and named in `omitted_fields`.
 */
export const transactionEventView = transactionResponse
  .extend({
    omitted_fields: z
      .array(omittedField)
      .optional()
      .meta({
        description: `Present when a field was left out of this event or list because its JSON exceeds ${limits.eventFieldInlineBytesMax} bytes: that field is null here; read it with GET /api/v1/transactions/{id}`,
      }),
  })
  .meta({ id: 'TransactionEventView' });

export const transactionIdParams = z.object({ tx_id: uuid });

export const listTransactionsQuery = z.object({
  role: z.enum(['buyer', 'seller', '']).optional(),
  status: z.enum(transactionStatuses).optional(),
  context_id: uuid.optional().meta({ description: 'Only transactions of this session (A2A contextId)' }),
  ...pageQuery,
});

/** A page of transactions: each as events show it, a large input or result_payload left out (`omitted_fields`). */
export const transactionList = pagedList(transactionEventView).meta({ id: 'TransactionList' });

/** The person's agent-space transactions (the console's My agents), optionally of one of their keys. */
export const agentTransactionsQuery = listTransactionsQuery.extend({
  api_key_id: uuid
    .optional()
    .meta({ description: "Only the transactions this key of the caller's made (an API key, device or MCP grant); 4040 for a key not the caller's" }),
});

export const agentTransactionList = pagedList(
  transactionEventView.extend({
    api_key_id: uuid.nullable().meta({
      description: "The caller's key that made the transaction (as its buyer); null when their own session made it, or when the caller is its seller",
    }),
  }),
).meta({ id: 'AgentTransactionList' });

export type CreateTransactionInput = z.output<typeof createTransactionBody>;
export type TransactionView = z.infer<typeof transactionResponse>;
export type TransactionEventView = z.infer<typeof transactionEventView>;
export type OmittedField = z.infer<typeof omittedField>;
export type ListTransactionsInput = z.output<typeof listTransactionsQuery>;
export type AgentTransactionsInput = z.output<typeof agentTransactionsQuery>;
export type AgentTransactionList = z.infer<typeof agentTransactionList>;
