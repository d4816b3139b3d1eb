import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/webhooks.ts';
import { route } from '../route.ts';

const base = '/api/v1/webhooks';

/** Webhooks (docs/webhooks.md): the caller's subscriptions, their deliveries, a ping and secret rotation. */
export const webhookRoutes = (engine: Engine) => [
  route({
    method: 'post', path: base, tag: 'webhooks', auth: 'user', successStatus: 201, errors: [4092],
    summary: 'Subscribe a URL to kinds of events; the answer shows the signing secret, once',
    body: schemas.createWebhookBody, response: schemas.webhookWithSecret,
    handler: ({ principal, body }) => engine.webhooks.create(principal!, body),
  }),
  route({
    method: 'get', path: base, tag: 'webhooks', auth: 'user',
    summary: "The caller's webhooks in this space, newest first (page/page_size or cursor)",
    query: schemas.listWebhooksQuery, response: schemas.webhookList,
    handler: ({ principal, query }) => engine.webhooks.list(principal!, query),
  }),
  route({
    method: 'get', path: `${base}/:webhook_id`, tag: 'webhooks', auth: 'user', errors: [4040],
    summary: 'One of your webhooks, with how many of its deliveries are pending, delivered and failed',
    params: schemas.webhookIdParams, response: schemas.webhookDetails,
    handler: ({ principal, params }) => engine.webhooks.get(principal!, params.webhook_id),
  }),
  route({
    method: 'delete', path: `${base}/:webhook_id`, tag: 'webhooks', auth: 'user', errors: [4040],
    summary: 'Stop a webhook: nothing more is sent to it (its deliveries stay readable until their retention ends)',
    params: schemas.webhookIdParams, response: schemas.webhookDeleted,
    handler: ({ principal, params }) => engine.webhooks.remove(principal!, params.webhook_id),
  }),
  route({
    method: 'get', path: `${base}/:webhook_id/deliveries`, tag: 'webhooks', auth: 'user', errors: [4040],
    summary: 'Deliveries of a webhook, newest first, each with its attempts (status filter; page/page_size or cursor)',
    params: schemas.webhookIdParams, query: schemas.listDeliveriesQuery, response: schemas.webhookDeliveryList,
    handler: ({ principal, params, query }) => engine.webhooks.deliveries(principal!, params.webhook_id, query),
  }),
  route({
    method: 'post', path: `${base}/:webhook_id/ping`, tag: 'webhooks', auth: 'user', successStatus: 201, errors: [4040],
    summary: 'Send a webhook.ping delivery now, signed like every delivery, to check the receiver',
    params: schemas.webhookIdParams, response: schemas.webhookPingResponse,
    handler: ({ principal, params }) => engine.webhooks.ping(principal!, params.webhook_id),
  }),
  route({
    method: 'post', path: `${base}/:webhook_id/rotate-secret`, tag: 'webhooks', auth: 'user', errors: [4040, 4092],
    summary: 'A new signing secret, shown once; the old one keeps signing beside it for 24 hours',
    params: schemas.webhookIdParams, response: schemas.webhookWithSecret,
    handler: ({ principal, params }) => engine.webhooks.rotateSecret(principal!, params.webhook_id),
  }),
];
