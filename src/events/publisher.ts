import type { Database } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import type { OutboxRow } from '../store/outbox.ts';
import type { EventBus } from './bus.ts';
import { limits } from '../limits.ts';

/**
 * Publishes committed outbox rows on the bus and takes them off the `unpublished_events` queue
 * in batches (db/migrations/072_event_queues.ts), so the relay only has to look at rows a crash
 * left behind, and the hot path pays no extra write per event.
 */
export const eventsChannel = 'marketplace:events';

export interface PublishedEvent {
  id: string;
  transaction_id: string;
  transaction_sequence: number;
  buyer_user_id: string;
  buyer_sequence: string;
  seller_user_id: string;
  seller_sequence: string;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
}

export function toPublishedEvent(row: OutboxRow): PublishedEvent {
  return {
    id: String(row.id),
    transaction_id: row.transaction_id,
    transaction_sequence: row.transaction_sequence,
    buyer_user_id: row.buyer_user_id,
    buyer_sequence: String(row.buyer_sequence),
    seller_user_id: row.seller_user_id,
    seller_sequence: String(row.seller_sequence),
    type: row.event_type,
    data: row.payload,
    created_at: new Date(row.created_at).toISOString(),
  };
}

/**
 * One outbox table and the bus channel its rows go out on: the transactions' (outbox_events) and
 * the tasks' (task_events). The publisher, the relay and the retention job treat both alike.
 */
export interface Feed<Row extends { id: string }> {
  table: string;
  channel: string;
  message(row: Row): string;
}

export const transactionFeed: Feed<OutboxRow> = { table: 'outbox_events', channel: eventsChannel, message: (row) => JSON.stringify(toPublishedEvent(row)) };

export interface Publisher<Row extends { id: string } = OutboxRow> {
  /** Starts publishing and returns at once: a response never waits on the bus. */
  publish(row: Row): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function createPublisher<Row extends { id: string }>(
  bus: EventBus,
  db: Database,
  log: Logger,
  feed: Feed<Row>,
  flushIntervalMs: number = limits.publishedMarkFlushMs,
): Publisher<Row> {
  let published: string[] = [];
  const flush = async () => {
    if (published.length === 0) return;
    const ids = published;
    published = [];
    try {
      await db('unpublished_events').where('feed', feed.table).whereIn('event_id', ids).del();
    } catch (error) {
      // Rows still queued are only republished by the relay; subscribers drop duplicates by sequence.
      log.warn('could not take outbox rows off the unpublished queue', { error, count: ids.length, table: feed.table });
    }
  };
  const timer = setInterval(() => void flush(), flushIntervalMs);
  timer.unref();
  return {
    publish(row) {
      // Commands on one connection keep their order, so not awaiting loses no ordering. A
      // failure leaves the row unmarked, and the relay publishes it later.
      bus.publish(feed.channel, feed.message(row)).then(
        () => published.push(String(row.id)),
        (error: unknown) =>
          log.warn('publish failed; the relay will retry', {
            error: error instanceof Error ? error.message : String(error),
            outbox_id: String(row.id),
            table: feed.table,
          }),
      );
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
