import { type CallbackNetwork, type PostOutcome, postGuarded } from '../../callbacks/client.ts';
import { webhookHeaders } from '../../callbacks/webhook-signing.ts';
import { nextAttemptAt } from '../../domain/webhooks.ts';
import { limits } from '../../limits.ts';
import type { EngineDependencies } from '../common/index.ts';
import { claimDue, type SendingHere } from './webhook-claim.ts';
import type { DeliveryRow, SubscriptionRow } from './webhook-rows.ts';

/**
 * The sender (docs/webhooks.md "Delivery"): claims due deliveries with SKIP LOCKED (each is one
 * instance's while its lease lasts), POSTs each, signed, through the same guarded client as
 * invoke's callbacks, and records the attempt. A 2xx answer delivers; anything else is tried
 * again later (exponential backoff with jitter) until the delivery window closes, then it has
 * failed, except what no retry can change (an address the guard refuses, a header value no
 * request can carry, a deleted subscription), which fails at its first attempt. The deliveries of
 * one subscription with the same ordering key (one transaction, one task) go out one at a time,
 * in event order: a later one waits while an earlier one is pending.
 *
 * Sends run in the background, bounded per instance, per owner and per subscription, and due
 * deliveries are taken owner by owner in turn (webhook-claim.ts), so a receiver that is slow or
 * down holds only its owner's share and never the API, the streams or other owners' receivers.
 */
/** What a subscription's deliveries POST: REST webhooks send the stored body; A2A pushes render theirs when sent. */
export interface DeliveryPayload {
  bodyOf(subscription: SubscriptionRow, delivery: DeliveryRow): Promise<string>;
  headersOf(subscription: SubscriptionRow): Record<string, string>;
}

export function createWebhookSender(
  { db, now, log }: EngineDependencies,
  network: CallbackNetwork,
  payload: DeliveryPayload,
  random: () => number = Math.random,
) {
  const sending: SendingHere = { perSubscription: new Map(), perOwner: new Map() };
  const sends = new Set<Promise<void>>();
  let inFlightTotal = 0;

  /** Due deliveries, taken owner by owner in turn within this instance's bounds (webhook-claim.ts). */
  function claim(): Promise<DeliveryRow[]> {
    return claimDue(db, now(), sending, Math.min(limits.webhookSendsInFlightMax - inFlightTotal, limits.webhookClaimBatchSize));
  }

  /** The secrets that sign: the current one, and the one it replaced while that is still honoured. */
  function secretsOf(subscription: SubscriptionRow, at: Date): string[] {
    const previousValid =
      subscription.previous_secret !== null && subscription.previous_secret_expires_at !== null && new Date(subscription.previous_secret_expires_at) > at;
    return previousValid ? [subscription.secret, subscription.previous_secret!] : [subscription.secret];
  }

  async function attempt(delivery: DeliveryRow, subscription: SubscriptionRow | undefined) {
    const startedAt = now();
    const started = Date.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    // No retry can change the outcome: the subscription is gone, the guard refuses its address, or a header cannot be sent.
    let final = false;
    if (!subscription || subscription.deleted_at !== null) {
      error = 'the subscription was deleted';
      final = true;
    } else {
      const outcome: PostOutcome = await payload.bodyOf(subscription, delivery).then(
        (body) => {
          const signature = webhookHeaders(secretsOf(subscription, startedAt), delivery.id, Math.floor(startedAt.getTime() / 1000), body);
          const headers = { 'Content-Type': 'application/json', 'User-Agent': 'marketplace-webhooks/1', ...signature, ...payload.headersOf(subscription) };
          return postGuarded({ url: subscription.url, body, headers, timeoutMs: limits.webhookTimeoutMs }, network);
        },
        (cause: unknown) => {
          log.warn('a webhook delivery could not be rendered', { error: cause, delivery_id: delivery.id });
          return { kind: 'failed' as const, reason: 'the event could not be rendered: its task is no longer readable' };
        },
      );
      if (outcome.kind === 'answered') {
        statusCode = outcome.status;
        if (outcome.status < 200 || outcome.status > 299)
          error = `HTTP ${outcome.status}: ${outcome.body.toString('utf8').slice(0, limits.webhookErrorLengthMax)}`;
      } else {
        error = outcome.kind === 'timeout' ? `no answer within ${limits.webhookTimeoutMs} ms` : outcome.reason;
        final = outcome.kind === 'failed' && outcome.permanent === true;
      }
    }
    await record(delivery, { startedAt, durationMs: Date.now() - started, statusCode, error, final });
  }

  async function record(
    delivery: DeliveryRow,
    result: { startedAt: Date; durationMs: number; statusCode: number | null; error: string | null; final: boolean },
  ) {
    const at = now();
    const retryAt =
      result.error === null || result.final
        ? null
        : nextAttemptAt(
            { firstDelayMs: limits.webhookRetryFirstDelayMs, delayMaxMs: limits.webhookRetryDelayMaxMs, windowMs: limits.webhookDeliveryWindowMs },
            new Date(delivery.created_at),
            at,
            delivery.attempts,
            random(),
          );
    const status = result.error === null ? 'delivered' : retryAt ? 'pending' : 'failed';
    await db.transaction(async (trx) => {
      // Only while the lease is still this attempt's: after a lease ran out, another instance owns the delivery.
      const changed = await trx('webhook_deliveries')
        .where({ id: delivery.id, status: 'sending', attempts: delivery.attempts })
        .update({
          status,
          lease_until: null,
          last_status_code: result.statusCode,
          last_error: result.error,
          next_attempt_at: retryAt ?? delivery.next_attempt_at,
          finished_at: status === 'pending' ? null : at,
        });
      if (changed === 0) return;
      await trx('webhook_attempts').insert({
        delivery_id: delivery.id,
        number: delivery.attempts,
        started_at: result.startedAt,
        duration_ms: result.durationMs,
        status_code: result.statusCode,
        error: result.error,
      });
    });
  }

  const count = (counts: Map<string, number>, key: string, by: number) => {
    const left = (counts.get(key) ?? 0) + by;
    if (left === 0) counts.delete(key);
    else counts.set(key, left);
  };

  function track(delivery: DeliveryRow, subscription: SubscriptionRow | undefined, onSettled: () => void) {
    // A delivery whose subscription is gone counts as its own owner's: it fails without a send.
    const owner = subscription?.owner_user_id ?? delivery.subscription_id;
    inFlightTotal += 1;
    count(sending.perSubscription, delivery.subscription_id, 1);
    count(sending.perOwner, owner, 1);
    const send: Promise<void> = attempt(delivery, subscription)
      .catch((error: unknown) => log.error('webhook delivery attempt failed to record', { error, delivery_id: delivery.id }))
      .finally(() => {
        inFlightTotal -= 1;
        count(sending.perSubscription, delivery.subscription_id, -1);
        count(sending.perOwner, owner, -1);
        sends.delete(send);
        onSettled();
      });
    sends.add(send);
  }

  /** Claims what is due and starts sending it; returns how many sends it started. `onSettled` runs as each ends. */
  async function sendDue(onSettled: () => void = () => {}): Promise<number> {
    const claimed = await claim();
    if (claimed.length === 0) return 0;
    const subscriptions = (await db('webhook_subscriptions').whereIn('id', [
      ...new Set(claimed.map((delivery) => delivery.subscription_id)),
    ])) as SubscriptionRow[];
    const byId = new Map(subscriptions.map((subscription) => [subscription.id, subscription]));
    for (const delivery of claimed) track(delivery, byId.get(delivery.subscription_id), onSettled);
    return claimed.length;
  }

  /** Resolves when every send started so far has been recorded. */
  async function settled() {
    while (sends.size > 0) await Promise.all([...sends]);
  }

  return {
    sendDue,
    settled,
    get inFlight() {
      return inFlightTotal;
    },
  };
}
