import type { Database } from '../db/database.ts';
import { withTransaction } from '../db/transaction.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../logger.ts';
import { periodic } from '../periodic.ts';
import type { EventBus } from './bus.ts';
import type { Feed } from './publisher.ts';

/**
 * Republishes outbox rows that were committed but are still on the `unpublished_events` queue: the
 * instance that committed them crashed, or the bus was down. SKIP LOCKED on the queue rows lets
 * every instance run a relay without two of them taking the same rows; subscribers drop any
 * duplicate by sequence.
 */
export function createRelay(bus: EventBus, db: Database, log: Logger, now: () => Date, feeds: readonly Feed<{ id: string }>[]) {
  async function relayFeed(feed: Feed<{ id: string }>): Promise<number> {
    return withTransaction(db, async ({ trx }) => {
      const rows = (await trx('unpublished_events as queued')
        .join(`${feed.table} as event`, 'event.id', 'queued.event_id')
        .where('queued.feed', feed.table)
        .where('event.created_at', '<', new Date(now().getTime() - limits.relayGraceMs))
        .orderBy('queued.event_id')
        .limit(limits.relayBatchSize)
        .select('event.*')
        .forUpdate('queued')
        .skipLocked()) as { id: string }[];
      if (rows.length === 0) return 0;
      for (const row of rows) await bus.publish(feed.channel, feed.message(row));
      await trx('unpublished_events')
        .where('feed', feed.table)
        .whereIn(
          'event_id',
          rows.map((row) => row.id),
        )
        .del();
      log.info('relayed unpublished events', { count: rows.length, table: feed.table });
      return rows.length;
    });
  }

  async function runOnce(): Promise<number> {
    let relayed = 0;
    for (const feed of feeds) relayed += await relayFeed(feed);
    return relayed;
  }

  const schedule = periodic('relay', runOnce, log);
  return { runOnce, start: (intervalMs: number = limits.relayIntervalMs) => schedule.start(intervalMs), stop: schedule.stop, idle: schedule.idle };
}
