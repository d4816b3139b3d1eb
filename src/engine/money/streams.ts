import type { EventHub } from '../../events/hub.ts';
import type { PublishedEvent } from '../../events/publisher.ts';
import type { StreamListener, Subscription, SubscribeOptions } from '../../events/stream-types.ts';
import type { Principal } from '../common/index.ts';
import type { TransactionEngine } from './transactions.ts';
import { canSeeEventOf } from '../access/index.ts';

/** One rule for every user stream, asked with each stream's principal: no function per stream. */
const seenBy = (event: PublishedEvent, principal: Principal) => canSeeEventOf(principal, event.data.transaction ?? {});

/**
 * Who may watch what, by the rules of access/transactions.ts. A transaction stream is open only to
 * its two parties within their space (anyone else gets the same 4040 as for a missing
 * transaction); a user stream carries the caller's own transactions of the caller's space only.
 */
export function createStreams(hub: EventHub, transactions: TransactionEngine) {
  async function subscribeTransaction(
    principal: Principal,
    idOrClientTaskId: string,
    options: SubscribeOptions,
    listener: StreamListener,
  ): Promise<Subscription> {
    const { id: transactionId } = await transactions.findForCaller(principal, idOrClientTaskId);
    return hub.subscribe({ kind: 'transaction', transactionId }, options, listener);
  }

  function subscribeUser(principal: Principal, options: SubscribeOptions, listener: StreamListener): Promise<Subscription> {
    return hub.subscribe({ kind: 'user', userId: principal.user_id }, options, listener, seenBy, principal);
  }

  return { subscribeTransaction, subscribeUser };
}

export type Streams = ReturnType<typeof createStreams>;
