/**
 * The deliveries room: events leaving the product for addresses its users gave. Webhook
 * subscriptions, the dispatcher that turns outbox rows into deliveries, the fair claim and the
 * sender with retries and permanent failures, A2A push notification configs, and their per-owner
 * caps. It reads the market's demand matches and the A2A room's task views through their doors.
 */
export { type PushConfig, type PushConfigInput, type PushGeneration, type PushRenderer } from './a2a-push.ts';
export { createWebhooks } from './webhooks.ts';
export { dispatchLockClass, sweepUnheard } from './unheard-events.ts';
