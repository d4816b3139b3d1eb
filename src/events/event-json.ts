import type { PublishedEvent } from './publisher.ts';
import type { PublishedTaskEvent } from './task-feed.ts';

// The JSON that streams and webhooks send for an event, apart from the feeds' own modules so that
// both kinds of event can be named here without a circle of imports (task-feed.ts knows
// publisher.ts's types).

/**
 * What a party (or their webhook) is shown of a transaction event: everything but the two
 * parties' positions in their own streams of all their transactions. Those route the event
 * inside the server, and the other party's would tell a buyer how many events a seller's
 * business has had between two of theirs. The stream's own position is the SSE `id`.
 */
export type PartyEvent = Omit<PublishedEvent, 'buyer_sequence' | 'seller_sequence'>;

export function partyEventView(event: PublishedEvent): PartyEvent {
  const { buyer_sequence: _buyerSequence, seller_sequence: _sellerSequence, ...view } = event;
  return view;
}

/** A transaction's event, told from a task event by the field only a transaction event routes by. */
const isTransactionEvent = (event: PublishedEvent | PublishedTaskEvent): event is PublishedEvent => 'buyer_sequence' in event;

const serialized = new WeakMap<object, string>();

/**
 * The JSON a stream sends for an event, computed once however many subscribers receive the same
 * event object: fan-out to N streams costs one stringify, not N. A transaction event is sent as
 * its view (partyEventView); a task event, one recipient's, as it is.
 */
export function eventJson(event: PublishedEvent | PublishedTaskEvent): string {
  let json = serialized.get(event);
  if (json === undefined) {
    json = JSON.stringify(isTransactionEvent(event) ? partyEventView(event) : event);
    serialized.set(event, json);
  }
  return json;
}

/** A task event's bus message is already the JSON its stream sends: keep it instead of serializing again. */
export function rememberJson(event: PublishedTaskEvent, json: string) {
  serialized.set(event, json);
}
