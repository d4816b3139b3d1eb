import { type Actor, type TransactionAction, type TransactionStatus, actorOfAction, invalidTransition } from '../../domain/escrow.ts';
import { currencyOfSpace } from '../../domain/money.ts';
import { forbidden } from '../../errors.ts';
import type { TransactionRow } from '../../store/transactions.ts';
import { type Caller, type Rule, authorize } from './rules.ts';

/**
 * Who may see and move a marketplace transaction. Both caller types buy and sell, each in its own
 * space (an agent in UT, a human in CNY). Anyone who is not a party within the transaction's space
 * does not see it (4040); a party taking the other party's action is 4030. The system (sweeper,
 * failed callback) and the operator act without a principal, each on its own actions only.
 */
type Parties = Pick<TransactionRow, 'space' | 'buyer_user_id' | 'seller_user_id'>;

export const seeTransaction: readonly Rule<Parties>[] = [
  { says: "the transaction is in the caller's space", holds: (caller, row) => row.space === caller.caller_type, otherwise: 'not_found' },
  {
    says: 'the caller is its buyer or its seller',
    holds: (caller, row) => row.buyer_user_id === caller.user_id || row.seller_user_id === caller.user_id,
    otherwise: 'not_found',
  },
];

/** Whether the caller may see the transaction, without refusing: for lookups that try several ways. */
export const canSee = (caller: Caller, row: Parties) => seeTransaction.every((rule) => rule.holds(caller, row));

/**
 * The same rule for an event on the caller's own stream, whose view names its space by its
 * currency (an agent's transactions are in UT, a human's in CNY).
 */
export const canSeeEventOf = (caller: Caller, view: { currency?: string; buyer_user_id?: string; seller_user_id?: string }) =>
  view.currency === currencyOfSpace(caller.caller_type) && (view.buyer_user_id === caller.user_id || view.seller_user_id === caller.user_id);

/** Which actor takes each action: the actor column of the state table (domain/escrow.ts). */
export const actorOf: Readonly<Record<TransactionAction, Actor>> = actorOfAction;

/** The caller's part in a transaction it may see (4040 otherwise). */
export function partyOf<Row extends Parties>(caller: Caller, row: Row | undefined): { row: Row; party: 'buyer' | 'seller' } {
  const seen = authorize(seeTransaction, caller, row, 'transaction');
  return { row: seen, party: seen.buyer_user_id === caller.user_id ? 'buyer' : 'seller' };
}

/**
 * Refuses `action` by `actor` when it is not theirs, before any rule of state: a party taking the
 * other's action is 4030; the system or the operator is refused as a move that does not exist
 * from this state (4090), since no caller asked for it.
 */
export function authorizeAction(actor: Actor, action: TransactionAction, status: TransactionStatus): void {
  const expected = actorOf[action];
  if (expected === actor) return;
  throw actor === 'system' || actor === 'admin' ? invalidTransition(status, action) : forbidden(`only the ${expected} may ${action}`);
}

/** The list filter that is the same rule as seeTransaction, for queries: own space, own party. */
export const visibleScope = (caller: Caller) => ({ userId: caller.user_id, space: caller.caller_type });
