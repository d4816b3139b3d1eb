/** A row of outbox_events: written by store/change.ts, published by events/publisher.ts. */
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
