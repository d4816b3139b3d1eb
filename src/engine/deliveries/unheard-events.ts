import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import type { FeedName } from './webhook-candidates.ts';

/**
 * Most events are heard by no subscription at all: none of their parties has a webhook or an A2A
 * push config. The dispatcher's pass (webhook-dispatch.ts) would still open a transaction per
 * feed, take the feed's advisory lock, read the queued events' parties, read two kinds of
 * subscriptions, delete the queue rows and commit: seven round trips and a knex transaction for
 * events that get no delivery. This takes all of them off the `undispatched_events` queue, for
 * the three feeds at once, in ONE statement under the same advisory locks, and says for which
 * feeds something is left that the full pass must look at (an event with a subscriber among its
 * parties, or more events than one batch).
 *
 * The answer is the full pass's own: a party without a live subscription of any kind (the pass
 * reads the parties' webhooks and the push configs they own) gets no delivery, and a subscription
 * made after this statement hears only events made after it (webhook-dispatch.ts `hears`); one
 * committing while the statement runs is missed exactly as the full pass, reading subscriptions
 * once per pass, would miss it.
 * docs/decisions/streams-and-deliveries.md "Events nobody hears leave the queue in one statement".
 */
interface FeedSweep {
  table: string;
  lockKey: number;
  /** The event's parties, as columns of `event`: whoever could own a subscription that hears it. */
  parties: string;
}

/** The advisory-lock class of the dispatchers (an arbitrary constant, distinct from other advisory locks of the product). */
export const dispatchLockClass = 190_019;

export const dispatchFeeds: Record<FeedName, FeedSweep> = {
  transaction: { table: 'outbox_events', lockKey: 1, parties: 'event.buyer_user_id, event.seller_user_id' },
  task: { table: 'task_events', lockKey: 2, parties: 'event.recipient_user_id' },
  demand: { table: 'demand_events', lockKey: 3, parties: 'event.recipient_user_id' },
};

const feedNames = Object.keys(dispatchFeeds) as FeedName[];

/**
 * One feed's part of the statement: its oldest queued events (the window) with their parties, read
 * by key; whether a party owns a live subscription, read by owner; the delete of the rest.
 */
function feedClauses(name: FeedName, { table, parties }: FeedSweep): string[] {
  return [
    `${name}_window AS MATERIALIZED (
      SELECT queued.event_id, (SELECT ARRAY[${parties}] FROM ${table} AS event WHERE event.id = queued.event_id) AS parties
        FROM undispatched_events AS queued
       WHERE queued.feed = '${table}' AND (SELECT ${name}_locked FROM locks)
       ORDER BY queued.event_id LIMIT ?)`,
    `${name}_heard AS MATERIALIZED (
      SELECT window_row.event_id, EXISTS (SELECT 1 FROM webhook_subscriptions AS s WHERE s.owner_user_id = ANY (window_row.parties) AND s.deleted_at IS NULL) AS heard
        FROM ${name}_window AS window_row)`,
    `${name}_swept AS (
      DELETE FROM undispatched_events AS queued
       WHERE queued.feed = '${table}' AND queued.event_id = ANY (ARRAY(SELECT event_id FROM ${name}_heard WHERE NOT heard))
      RETURNING queued.event_id)`,
  ];
}

const locks = `locks AS MATERIALIZED (SELECT ${feedNames
  .map((name) => `pg_try_advisory_xact_lock(${dispatchLockClass}, ${dispatchFeeds[name].lockKey}) AS ${name}_locked`)
  .join(', ')})`;

const sweepText = `WITH ${[locks, ...feedNames.flatMap((name) => feedClauses(name, dispatchFeeds[name]))].join(',\n')}
  SELECT ${feedNames.map((name) => `(SELECT count(*)::int FROM ${name}_window) AS ${name}_windowed, (SELECT count(*)::int FROM ${name}_swept) AS ${name}_swept`).join(', ')}`;

export interface Swept {
  /** Events taken off the queue without a delivery. */
  swept: number;
  /** Whether the window held events a subscription may hear: the full pass is for them. */
  heard: boolean;
  /** Whether the window was full: more events of the feed may be waiting behind it. */
  full: boolean;
}

/** Takes the events no subscription hears off the queue, for every feed whose advisory lock is free. */
export async function sweepUnheard(db: Knex, windowSize: number = limits.webhookDispatchBatchSize): Promise<Record<FeedName, Swept>> {
  // Planned at each run, with the tables' sizes as they are then: planned once for a connection
  // (db/prepared.ts) while the tables were small, a join chosen then could walk every subscription
  // or a whole event table on every sweep once they have grown.
  const { rows } = (await db.raw(
    sweepText,
    feedNames.map(() => windowSize),
  )) as { rows: Record<string, number>[] };
  const row = rows[0];
  const result = {} as Record<FeedName, Swept>;
  for (const name of feedNames) {
    const windowed = row![`${name}_windowed`]!;
    const swept = row![`${name}_swept`]!;
    result[name] = { swept, heard: windowed > swept, full: windowed === windowSize };
  }
  return result;
}
