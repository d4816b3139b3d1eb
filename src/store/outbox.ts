import type { Knex } from 'knex';
import type { TransactionRow } from './transactions.ts';

export interface OutboxRow {
  id: string;
  transaction_id: string;
  transaction_sequence: number;
  buyer_user_id: string;
  buyer_sequence: string;
  seller_user_id: string;
  seller_sequence: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/**
 * Writes the outgoing event in the same database transaction as the state change. Both parties'
 * stream counters are locked in sorted order and bumped in the same statement, which gives each
 * user's stream a gap-free sequence for resuming after a disconnect.
 */
export async function appendEvent(trx: Knex, transaction: TransactionRow, eventType: string, payload: Record<string, unknown>, now: Date): Promise<OutboxRow> {
  const result = await trx.raw(
    `WITH locked AS (
       SELECT owner_user_id FROM event_streams WHERE owner_user_id IN (?, ?) ORDER BY owner_user_id FOR NO KEY UPDATE
     ), bumped AS (
       UPDATE event_streams AS stream SET last_sequence = stream.last_sequence + 1
         FROM locked WHERE stream.owner_user_id = locked.owner_user_id
         RETURNING stream.owner_user_id, stream.last_sequence
     )
     INSERT INTO outbox_events (transaction_id, transaction_sequence, buyer_user_id, buyer_sequence, seller_user_id, seller_sequence, event_type, payload, created_at)
     SELECT ?, ?, ?, (SELECT last_sequence FROM bumped WHERE owner_user_id = ?), ?, (SELECT last_sequence FROM bumped WHERE owner_user_id = ?), ?, ?::jsonb, ?
     RETURNING *`,
    [
      transaction.buyer_user_id, transaction.seller_user_id,
      transaction.id, transaction.event_sequence, transaction.buyer_user_id, transaction.buyer_user_id,
      transaction.seller_user_id, transaction.seller_user_id, eventType, JSON.stringify(payload), now,
    ],
  );
  return result.rows[0] as OutboxRow;
}
