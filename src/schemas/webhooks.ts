import { z } from 'zod';
import { webhookEventTypes, webhookKindPatterns } from '../domain/webhooks.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { pageQuery, pagedList } from './pagination.ts';

/** Webhooks (docs/webhooks.md): subscriptions, their deliveries, and what a delivery's body is. */
export const subscriptionKinds = ['webhook', 'a2a_push'] as const;
export const createWebhookBody = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
      .max(limits.urlLengthMax)
      .meta({ description: 'Where deliveries are POSTed. Private and reserved addresses are refused unless the operator set CALLBACK_ALLOW_PRIVATE' }),
    event_types: z
      .array(z.enum(webhookKindPatterns))
      .min(1)
      .max(webhookKindPatterns.length)
      .refine((kinds) => new Set(kinds).size === kinds.length, 'must not name a kind twice')
      .meta({ description: 'Kinds to receive: a kind (`transaction.settled`), a family (`transaction.*`, `task.*`, `application.*`), or `*`' }),
    transaction_id: uuid.optional().meta({ description: 'Only the events of this transaction' }),
    task_id: uuid.optional().meta({ description: 'Only the events of this task (and of the transaction it was matched into)' }),
    description: z.string().trim().min(1).max(limits.webhookDescriptionLengthMax).optional(),
  })
  .meta({ id: 'WebhookCreate' });

export const webhookResponse = z
  .object({
    id: uuid,
    url: z.string(),
    event_types: z.array(z.string()),
    transaction_id: uuid.nullable(),
    task_id: uuid.nullable(),
    description: z.string().nullable(),
    owner_type: z.enum(['agent', 'human']),
    created_at: dateTime,
    previous_secret_expires_at: dateTime.nullable().meta({ description: 'After a rotation: until when the old secret still signs beside the new one' }),
    kind: z
      .enum(subscriptionKinds)
      .meta({ description: '`webhook` (this API), or `a2a_push`: an A2A push notification config set over JSON-RPC (docs/webhooks.md)' }),
    a2a: z
      .object({ task_id: z.string(), config_id: z.string(), generation: z.enum(['v0.1', 'v0.3', 'v1.0']) })
      .nullable()
      .meta({ description: 'For an A2A push config: its task (as the agent named it), its id and the generation it speaks' }),
  })
  .meta({ id: 'Webhook' });

export const webhookWithSecret = webhookResponse
  .extend({ secret: z.string().meta({ description: 'The signing secret (Standard Webhooks, `whsec_...`): shown here once, never again' }) })
  .meta({ id: 'WebhookWithSecret' });

export const webhookDetails = webhookResponse
  .extend({ deliveries: z.object({ pending: z.number().int(), delivered: z.number().int(), failed: z.number().int() }) })
  .meta({ id: 'WebhookDetails' });

export const webhookIdParams = z.object({ webhook_id: uuid });
export const webhookList = pagedList(webhookResponse).meta({ id: 'WebhookList' });
export const listWebhooksQuery = z.object({
  kind: z.enum(subscriptionKinds).default('webhook').meta({ description: 'Which subscriptions: webhooks (default), or A2A push notification configs' }),
  ...pageQuery,
});

export const deliveryStatuses = ['pending', 'delivered', 'failed'] as const;
export const listDeliveriesQuery = z.object({ status: z.enum(deliveryStatuses).optional(), ...pageQuery });

export const webhookDelivery = z
  .object({
    id: uuid.meta({ description: 'The delivery id, sent as `webhook-id`: the same on every retry, so a receiver can drop repeats' }),
    subscription_id: uuid,
    event_type: z.string(),
    status: z.enum(deliveryStatuses),
    attempts: z.number().int(),
    next_attempt_at: dateTime.nullable(),
    last_status_code: z.number().int().nullable(),
    last_error: z.string().nullable(),
    created_at: dateTime,
    finished_at: dateTime.nullable(),
    body: z
      .record(z.string(), z.unknown())
      .meta({ description: 'The JSON body POSTed: `{type, timestamp, data}`; for an A2A push, what it is rendered from when sent (`{a2a: {part, view}}`)' }),
    attempt_log: z.array(
      z.object({
        number: z.number().int(),
        started_at: dateTime,
        duration_ms: z.number().int(),
        status_code: z.number().int().nullable(),
        error: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'WebhookDelivery' });
export const webhookDeliveryList = pagedList(webhookDelivery).meta({ id: 'WebhookDeliveryList' });

export const webhookPingResponse = z
  .object({ delivery_id: uuid, event_type: z.literal('webhook.ping'), status: z.literal('pending') })
  .meta({ id: 'WebhookPing' });
export const webhookDeleted = z.object({ id: uuid, deleted: z.literal(true) });

/** What every delivery POSTs (the Standard Webhooks payload shape): the event as the streams carry it. */
export const webhookPayload = z
  .object({ type: z.enum(webhookEventTypes as [string, ...string[]]), timestamp: dateTime, data: z.record(z.string(), z.unknown()) })
  .meta({ id: 'WebhookPayload' });

export type CreateWebhookInput = z.output<typeof createWebhookBody>;

/** `demand.matched`'s event: the demand, the capability now offered, and how it scored against the demand. */
export const demandMatchedEvent = z
  .object({
    id: z.string().meta({ description: 'The event id (increasing)' }),
    type: z.literal('demand.matched'),
    demand_id: uuid,
    capability: z.object({ id: uuid, title: z.string(), price: z.string(), currency: z.enum(['UT', 'CNY']), pricing_model: z.string(), category: z.string() }),
    score: z.number(),
    similarity: z.number(),
    price_alignment: z.number(),
    quality_score: z.number(),
    created_at: dateTime,
  })
  .meta({ id: 'DemandMatchedEvent' });
export type DemandMatchedEvent = z.output<typeof demandMatchedEvent>;
