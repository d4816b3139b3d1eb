import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import type { DeliveryRow } from './webhook-rows.ts';

/**
 * The sender's claim (docs/webhooks.md "Delivery"), one SQL statement: due deliveries taken owner
 * by owner in turn, within this instance's bounds, each locked with SKIP LOCKED and leased, so that
 * several instances claiming at once never take the same delivery.
 *
 * 1. `queued`: the subscriptions with anything pending, found by skipping through the index
 *    webhook_deliveries_turns (migration 035), one probe per subscription however long its queue.
 * 2. `heads`: each one's first due deliveries in order of their next attempt, at most a
 *    subscription's bound, without one whose earlier delivery of the same ordering key (the same
 *    transaction or task) is still pending; numbered after the sends it has in flight here.
 * 3. `turns`: those within the subscription's bound, numbered per owner after the owner's sends in
 *    flight here: an owner's n-th turn. Beyond the owner's bound they wait.
 * 4. The claim takes the first turn of every owner, then the second, and so on (older first within
 *    a turn), as many as this instance has room for, skipping rows another instance has locked.
 *    What it locks is checked again against the row as it is now, so a delivery another instance
 *    leased a moment ago is not taken twice.
 *
 * The turns are counted on this instance, as its bounds are: with several instances, one owner
 * holds at most its bound on each, out of each one's slots.
 */
const claimSql = `
WITH RECURSIVE queued AS (
  (SELECT subscription_id FROM webhook_deliveries WHERE status IN ('pending', 'sending') ORDER BY subscription_id LIMIT 1)
  UNION ALL
  SELECT (SELECT following.subscription_id FROM webhook_deliveries AS following
           WHERE following.status IN ('pending', 'sending') AND following.subscription_id > queued.subscription_id
           ORDER BY following.subscription_id LIMIT 1)
    FROM queued WHERE queued.subscription_id IS NOT NULL
),
sending_per_subscription AS (SELECT * FROM unnest(CAST(? AS uuid[]), CAST(? AS int[])) AS here(subscription_id, sending)),
sending_per_owner AS (SELECT * FROM unnest(CAST(? AS uuid[]), CAST(? AS int[])) AS here(owner_user_id, sending)),
heads AS (
  SELECT head.id, head.next_attempt_at, subscription.owner_user_id,
         COALESCE(sending_per_subscription.sending, 0) + row_number() OVER (PARTITION BY head.subscription_id ORDER BY head.next_attempt_at, head.id) AS subscription_turn
    FROM queued
    JOIN webhook_subscriptions AS subscription ON subscription.id = queued.subscription_id
    LEFT JOIN sending_per_subscription ON sending_per_subscription.subscription_id = queued.subscription_id
    CROSS JOIN LATERAL (
      SELECT due.id, due.subscription_id, due.next_attempt_at FROM webhook_deliveries AS due
       WHERE due.subscription_id = queued.subscription_id AND due.status IN ('pending', 'sending')
         AND due.next_attempt_at <= ? AND (due.status = 'pending' OR due.lease_until <= ?)
         AND NOT EXISTS (
           SELECT 1 FROM webhook_deliveries AS earlier
            WHERE earlier.subscription_id = due.subscription_id AND earlier.ordering_key = due.ordering_key
              AND earlier.status IN ('pending', 'sending') AND (earlier.source_event_id, earlier.part) < (due.source_event_id, due.part))
       ORDER BY due.next_attempt_at, due.id LIMIT ?) AS head
),
turns AS MATERIALIZED (
  SELECT heads.id, heads.next_attempt_at,
         COALESCE(sending_per_owner.sending, 0) + row_number() OVER (PARTITION BY heads.owner_user_id ORDER BY heads.next_attempt_at, heads.id) AS turn
    FROM heads LEFT JOIN sending_per_owner ON sending_per_owner.owner_user_id = heads.owner_user_id
   WHERE heads.subscription_turn <= ?
)
UPDATE webhook_deliveries SET status = 'sending', lease_until = ?, attempts = attempts + 1
 WHERE id IN (
   SELECT locked.id FROM turns JOIN webhook_deliveries AS locked ON locked.id = turns.id
    WHERE turns.turn <= ? AND locked.status IN ('pending', 'sending') AND locked.next_attempt_at <= ? AND (locked.status = 'pending' OR locked.lease_until <= ?)
    ORDER BY turns.turn, turns.next_attempt_at, turns.id
    LIMIT ? FOR UPDATE OF locked SKIP LOCKED)
RETURNING *`;

/** Sends in flight on this instance, per subscription and per owner. */
export interface SendingHere {
  perSubscription: Map<string, number>;
  perOwner: Map<string, number>;
}

const asArrays = (counts: Map<string, number>) => [`{${[...counts.keys()].join(',')}}`, `{${[...counts.values()].join(',')}}`];

/** Claims up to `room` due deliveries (docs above); each comes back leased to this instance, its attempt counted. */
export async function claimDue(db: Knex, at: Date, sending: SendingHere, room: number): Promise<DeliveryRow[]> {
  if (room <= 0) return [];
  const result = await db.raw(claimSql, [
    ...asArrays(sending.perSubscription),
    ...asArrays(sending.perOwner),
    at,
    at,
    limits.webhookSendsInFlightPerSubscriptionMax,
    limits.webhookSendsInFlightPerSubscriptionMax,
    new Date(at.getTime() + limits.webhookLeaseMs),
    limits.webhookSendsInFlightPerOwnerMax,
    at,
    at,
    room,
  ]);
  return result.rows as DeliveryRow[];
}
