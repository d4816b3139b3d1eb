import type { Database } from '../db/database.ts';
import { limits } from '../limits.ts';
import type { OutboxRow } from '../store/outbox.ts';
import type { TaskEventRow } from '../store/task-events.ts';
import { type PublishedEvent, toPublishedEvent } from './publisher.ts';
import type { SubscriberSource } from './subscriber.ts';
import { type PublishedTaskEvent, toPublishedTaskEvent } from './task-feed.ts';

/**
 * How a subscriber of each kind reads the outbox: one object per kind and instance, shared by
 * every subscriber of that kind, each asking for its own stream by key.
 */

/** A transaction's stream, keyed by the transaction id: its transaction_sequence. */
export function transactionSource(db: Database): SubscriberSource<PublishedEvent> {
  return {
    sequenceOf: (event) => BigInt(event.transaction_sequence),
    headSequence: async (transactionId) => BigInt((await db('transactions').where({ id: transactionId }).first('event_sequence'))?.event_sequence ?? 0),
    fetchAfter: async (transactionId, after, limit) =>
      (
        (await db('outbox_events')
          .where({ transaction_id: transactionId })
          .where('transaction_sequence', '>', String(after))
          .orderBy('transaction_sequence')
          .limit(limit)) as OutboxRow[]
      ).map(toPublishedEvent),
  };
}

type HeadTable = 'event_streams' | 'task_event_streams';

/** The head of one user's stream (transactions or tasks): where a stream without Last-Event-ID starts. */
async function headIn(db: Database, table: HeadTable, userId: string): Promise<bigint> {
  return BigInt((await db(table).where({ owner_user_id: userId }).first('last_sequence'))?.last_sequence ?? 0);
}

interface HeadAsked {
  userId: string;
  resolve(head: bigint): void;
  reject(error: unknown): void;
}

/**
 * The heads of streams that open together, read together: one round of reads per table in flight,
 * and the streams that ask meanwhile go in the next one, limits.streamHeadsPerQueryMax owners a
 * query at most. A storm of clients reconnecting at once (a restart, a load balancer moving them)
 * would otherwise send one query per stream and hold each one's objects while it waits for a
 * pooled connection. A stream's head is still read after the stream registered for live events
 * (hub.ts attach): a request joins only a read not yet sent.
 */
export function batchedHeads(db: Database, table: HeadTable): (userId: string) => Promise<bigint> {
  let asked: HeadAsked[] = [];
  let busy = false;

  async function readPart(part: HeadAsked[]) {
    try {
      const owners = [...new Set(part.map((ask) => ask.userId))];
      const rows = (await db(table).whereIn('owner_user_id', owners).select('owner_user_id', 'last_sequence')) as {
        owner_user_id: string;
        last_sequence: string;
      }[];
      const heads = new Map(rows.map((row) => [row.owner_user_id.toLowerCase(), BigInt(row.last_sequence)]));
      for (const ask of part) ask.resolve(heads.get(ask.userId) ?? 0n);
    } catch (error) {
      for (const ask of part) ask.reject(error);
    }
  }

  /**
   * Each round takes everything asked so far, in parts read at once: with the database unreachable,
   * every stream of a round gets its error after one acquire timeout, not one timeout per part.
   */
  async function readWhileAsked() {
    const partMax = Math.max(1, limits.streamHeadsPerQueryMax);
    try {
      while (asked.length > 0) {
        const round = asked;
        asked = [];
        const parts: HeadAsked[][] = [];
        for (let start = 0; start < round.length; start += partMax) parts.push(round.slice(start, start + partMax));
        await Promise.all(parts.map(readPart));
      }
    } finally {
      busy = false;
    }
  }

  return (userId) =>
    new Promise<bigint>((resolve, reject) => {
      asked.push({ userId: userId.toLowerCase(), resolve, reject });
      if (busy) return;
      busy = true;
      setImmediate(() => void readWhileAsked());
    });
}

/** A user's stream of all their transactions, keyed by the user id: their buyer or seller sequence. */
export function userSource(db: Database): SubscriberSource<PublishedEvent> {
  return {
    sequenceOf: (event, userId) => BigInt(event.buyer_user_id === userId ? event.buyer_sequence : event.seller_sequence),
    headSequence: (userId) => headIn(db, 'event_streams', userId),
    fetchAfter: async (userId, after, limit) => {
      const result = await db.raw(
        `SELECT * FROM (
           SELECT *, buyer_sequence AS owner_sequence FROM outbox_events WHERE buyer_user_id = ? AND buyer_sequence > ?
           UNION ALL
           SELECT *, seller_sequence AS owner_sequence FROM outbox_events WHERE seller_user_id = ? AND seller_sequence > ?
         ) AS mine ORDER BY owner_sequence LIMIT ?`,
        [userId, String(after), userId, String(after), limit],
      );
      return (result.rows as OutboxRow[]).map(toPublishedEvent);
    },
  };
}

/** A user's task stream (docs/tasks.md "Task events"), keyed by the recipient's user id. */
export function taskSource(db: Database): SubscriberSource<PublishedTaskEvent> {
  return {
    sequenceOf: (event) => BigInt(event.sequence),
    headSequence: (userId) => headIn(db, 'task_event_streams', userId),
    fetchAfter: async (userId, after, limit) =>
      (
        (await db('task_events')
          .where({ recipient_user_id: userId })
          .where('recipient_sequence', '>', String(after))
          .orderBy('recipient_sequence')
          .limit(limit)) as TaskEventRow[]
      ).map(toPublishedTaskEvent),
  };
}
