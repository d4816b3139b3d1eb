/**
 * The outbox events of a change statement (store/change.ts): each transaction event written once,
 * numbered in the streams of both its parties.
 */
export interface NewEvent {
  type: string;
  payload: Record<string, unknown>;
}

/** What the numbering needs of a change (store/change.ts StateChange). */
interface EventChange {
  transactionId: string;
  buyerUserId: string;
  sellerUserId: string;
  write: { kind: 'update'; fromSequence: number } | { kind: string };
  events: NewEvent[];
  at: Date;
}

/** The number of a change's first event in its transaction's own sequence: after the row's last for a move, 1 for a new row. */
export const firstSequenceOf = (write: EventChange['write']) => (write.kind === 'update' ? (write as { fromSequence: number }).fromSequence + 1 : 1);

/**
 * The outbox rows of every applied change, numbered in each party's stream: a user's counter is
 * bumped once by all of its events in the statement, and its events take the numbers before the
 * new value in the order of ordinal, then event. Left joins: a party without a stream counter row
 * gets a NULL sequence, which the NOT NULL column refuses, failing the whole statement rather
 * than committing a change without its event.
 */
export function eventClauses(numbered: { change: EventChange; ordinal: number }[], bindings: unknown[]): string[] {
  const records = numbered.flatMap(({ change, ordinal }) => {
    const first = firstSequenceOf(change.write);
    return change.events.map((event, index) => ({
      ordinal,
      position: index + 1,
      transaction_id: change.transactionId,
      transaction_sequence: first + index,
      buyer_user_id: change.buyerUserId,
      seller_user_id: change.sellerUserId,
      type: event.type,
      payload: event.payload,
      created_at: change.at,
    }));
  });
  bindings.push(JSON.stringify(records));
  return [
    `event_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS event(ordinal int, position int, transaction_id uuid, transaction_sequence int,
        buyer_user_id uuid, seller_user_id uuid, type text, payload jsonb, created_at timestamptz)
      WHERE event.ordinal IN (SELECT ordinal FROM changed))`,
    `party_events AS (SELECT buyer_user_id AS owner_user_id, ordinal, position FROM event_input
      UNION ALL SELECT seller_user_id, ordinal, position FROM event_input)`,
    `locked_streams AS (SELECT owner_user_id FROM event_streams WHERE owner_user_id IN (SELECT owner_user_id FROM party_events)
      ORDER BY owner_user_id FOR NO KEY UPDATE)`,
    `bumped AS (UPDATE event_streams AS stream SET last_sequence = stream.last_sequence + counted.events
       FROM (SELECT party_events.owner_user_id, count(*) AS events FROM party_events JOIN locked_streams USING (owner_user_id)
              GROUP BY party_events.owner_user_id) AS counted
      WHERE stream.owner_user_id = counted.owner_user_id
      RETURNING stream.owner_user_id, stream.last_sequence)`,
    `numbered AS (SELECT party_events.owner_user_id, party_events.ordinal, party_events.position,
        bumped.last_sequence + 1 - row_number() OVER (PARTITION BY party_events.owner_user_id ORDER BY party_events.ordinal DESC, party_events.position DESC) AS sequence
      FROM party_events LEFT JOIN bumped USING (owner_user_id))`,
    `events AS (INSERT INTO outbox_events (transaction_id, transaction_sequence, buyer_user_id, buyer_sequence, seller_user_id, seller_sequence, event_type, payload, created_at)
      SELECT event.transaction_id, event.transaction_sequence, event.buyer_user_id, buyer.sequence, event.seller_user_id, seller.sequence, event.type, event.payload, event.created_at
        FROM event_input AS event
        LEFT JOIN numbered AS buyer ON buyer.owner_user_id = event.buyer_user_id AND buyer.ordinal = event.ordinal AND buyer.position = event.position
        LEFT JOIN numbered AS seller ON seller.owner_user_id = event.seller_user_id AND seller.ordinal = event.ordinal AND seller.position = event.position
       ORDER BY event.ordinal, event.position
      RETURNING id, transaction_id, transaction_sequence, buyer_sequence, seller_sequence)`,
  ];
}
