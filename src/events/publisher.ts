import type { Database } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import type { OutboxRow } from '../store/outbox.ts';
import type { EventBus } from './bus.ts';
import { limits } from '../limits.ts';

/**
 * Publishes committed outbox rows on the bus and marks them published in batches, so the relay
 * only has to look at rows a crash left behind, and the hot path pays no extra write per event.
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

const serialized = new WeakMap<PublishedEvent, string>();

/**
 * The JSON of an event, computed once however many subscribers receive the same event object:
 * fan-out to N streams costs one stringify, not N.
 */
export function eventJson(event: PublishedEvent): string {
  let json = serialized.get(event);
  if (json === undefined) {
    json = JSON.stringify(event);
    serialized.set(event, json);
  }
  return json;
}

/** The bus message is already the event's JSON: keep it instead of serializing again. */
export function rememberJson(event: PublishedEvent, json: string) {
  serialized.set(event, json);
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

export interface Publisher {
  /** Starts publishing and returns at once: a response never waits on the bus. */
  publish(row: OutboxRow): void;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function createPublisher(bus: EventBus, db: Database, log: Logger, flushIntervalMs: number = limits.publishedMarkFlushMs): Publisher {
  let published: string[] = [];
  const flush = async () => {
    if (published.length === 0) return;
    const ids = published;
    published = [];
    try {
      await db('outbox_events').whereIn('id', ids).update({ published_at: db.fn.now() });
    } catch (error) {
      // Unmarked rows are only republished by the relay; subscribers drop duplicates by sequence.
      log.warn('could not mark outbox rows published', { error, count: ids.length });
    }
  };
  const timer = setInterval(() => void flush(), flushIntervalMs);
  timer.unref();
  return {
    publish(row) {
      // Commands on one connection keep their order, so not awaiting loses no ordering. A
      // failure leaves the row unmarked, and the relay publishes it later.
      bus.publish(eventsChannel, JSON.stringify(toPublishedEvent(row))).then(
        () => published.push(String(row.id)),
        (error: unknown) => log.warn('publish failed; the relay will retry', { error: error instanceof Error ? error.message : String(error), outbox_id: String(row.id) }),
      );
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
