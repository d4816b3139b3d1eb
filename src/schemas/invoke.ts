import { z } from 'zod';
import { uuid } from './common.ts';
import { amountOutput } from './money.ts';
import { idempotencyKey, maxPriceInput } from './transactions.ts';

/** Invoke request and answer (specification "Invoke request and response"; decisions section 7). */
export const invokeBody = z
  .strictObject({
    input: z.record(z.string(), z.unknown()).optional().meta({ description: "Passed to the capability's callback as `input` ({} when absent)" }),
    max_price: maxPriceInput,
    idempotency_key: idempotencyKey.optional().meta({ description: 'Or the Idempotency-Key header (both and different: 4000). Agent callers must send one.' }),
  })
  .meta({ id: 'InvokeRequest' });

export const invokeResponse = z
  .object({
    transaction_id: uuid,
    result: z.record(z.string(), z.unknown()).nullable().meta({ description: "The callback's `result`: an object or null" }),
    charged_ut: amountOutput.meta({ description: 'What the buyer paid: the price' }),
    latency_ms: z.number().int().meta({ description: "From the request's arrival to the recorded outcome, in milliseconds" }),
    status: z.literal('settled'),
  })
  .meta({ id: 'InvokeResult' });

export type InvokeBody = z.output<typeof invokeBody>;
