import { z } from 'zod';
import { demandMatched, webhookEventTypes, webhookPing } from '../src/domain/webhooks.ts';
import { demandMatchedEvent } from '../src/schemas/webhooks.ts';
import { taskStreamEvent } from '../src/schemas/tasks.ts';
import { streamEvent } from './routes/streams.ts';

type JsonSchema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 `webhooks` section (docs/webhooks.md "Event kinds"): one entry per kind of
 * event a subscription can receive, each the POST a receiver gets, with the Standard Webhooks
 * headers and the body's schema: the event exactly as the streams carry it, inside
 * `{type, timestamp, data}`.
 */
const signatureHeaders = [
  {
    name: 'webhook-id',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'The delivery id: the same on every retry of one delivery; drop a repeat you have already processed',
  },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description: 'Unix seconds of this attempt; refuse one more than five minutes from your clock',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string' },
    description:
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{raw body}` keyed with the secret (after a rotation, two signatures separated by a space)',
  },
];

const payloadOf = (type: string, data: z.ZodType) =>
  z.object({ type: z.literal(type), timestamp: z.string().meta({ description: 'When the event happened (ISO 8601)' }), data });

export function webhookEntries(convert: (schema: z.ZodType, io: 'input' | 'output') => JsonSchema) {
  const entries: Record<string, unknown> = {};
  for (const type of webhookEventTypes) {
    const data =
      type === webhookPing
        ? z.object({ webhook_id: z.string() })
        : type === demandMatched
          ? demandMatchedEvent
          : type.startsWith('transaction.')
            ? streamEvent
            : taskStreamEvent;
    entries[type] = {
      post: {
        summary:
          type === webhookPing
            ? 'Sent on POST /api/v1/webhooks/{id}/ping, to every subscription'
            : `A ${type} event, to subscriptions naming it, its family or *`,
        // `transaction.cancelled_by_buyer` -> `webhookTransactionCancelledByBuyer`: a generated receiver's handler name.
        operationId: `webhook${type.replace(/(?:^|[._])([a-z])/g, (_match, letter: string) => letter.toUpperCase())}`,
        // No credential of the receiver's: the receiver checks the signature headers below.
        security: [],
        parameters: signatureHeaders,
        requestBody: { required: true, content: { 'application/json': { schema: convert(payloadOf(type, data), 'output') } } },
        responses: {
          '200': { description: 'Any 2xx acknowledges the delivery; anything else (or no answer within 10 s) is retried with backoff for 24 hours' },
        },
      },
    };
  }
  return entries;
}
