import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { prepared } from '../../db/prepared.ts';
import { AppError } from '../../errors.ts';
import { authorize, linkPurchaseTo } from '../access/index.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import type { InsufficientBalance } from '../../store/ledger.ts';
import type { TransactionRow } from '../../store/transactions.ts';
import type { Principal } from '../common/index.ts';

/**
 * A new transaction, as a create here (transactions.ts) and an invoke (market/invoke.ts) both
 * make one: the command that asks for it, its row, the demand it may name, and the 4020 of a
 * freeze or hold short of money.
 */
export interface CreateTransactionCommand {
  capability_id: string;
  demand_id?: string;
  context_id?: string;
  booked_hours?: number;
  note?: string;
  input?: Record<string, unknown>;
  /** A2A v0.1: the task id the client chose; it finds the transaction later, like its own id. */
  client_task_id?: string;
  /**
   * The most the caller will pay (auto_accept passes the demand's max_price). The price is read
   * again inside the purchase's statement, so a seller who raised it since the caller's check is
   * refused (4093, price_above_ceiling) with nothing written, instead of freezing more than the budget.
   */
  max_price?: bigint;
  /**
   * What the buyer was shown this purchase would cost (an A2A conversation's candidate, priced for
   * the booked hours): the ceiling when no max_price was sent, refused with 4093 saying so.
   */
  shown_price?: bigint;
  /** The A2A conversation buying: unique among transactions, so a conversation buys at most once. */
  conversation_id?: string;
}

/** A new transaction in pending_freeze; the fee rate is fixed now, as part of the purchase's terms. */
export function newTransactionRow(
  principal: Principal,
  command: CreateTransactionCommand,
  capability: CapabilityRow,
  price: bigint,
  at: Date,
  feeBps: number,
): TransactionRow {
  return {
    id: randomUUID(),
    buyer_user_id: principal.user_id,
    seller_user_id: capability.owner_user_id,
    capability_id: capability.id,
    demand_id: command.demand_id ?? null,
    // The key whose budget the purchase counts against is the key that made it (null: no own key).
    api_key_id: principal.budget_key_id ?? null,
    context_id: command.context_id ?? randomUUID(),
    space: principal.caller_type,
    currency: currencyOfSpace(principal.caller_type),
    transaction_type: capability.pricing_model,
    price: String(price),
    booked_hours: command.booked_hours ?? null,
    auto_accept: capability.auto_accept_min !== null && price >= BigInt(capability.auto_accept_min),
    note: command.note ?? null,
    client_task_id: command.client_task_id ?? null,
    conversation_id: command.conversation_id ?? null,
    fee_bps: feeBps,
    input: command.input ?? null,
    ...untouchedLifecycle(at),
  };
}

/**
 * What every new transaction row starts with, whoever makes it (a purchase here, a task's
 * acceptance in engine/work/task-acceptance.ts): pending_freeze at its first event, no step of its
 * lifecycle taken yet, no result, no dispute, no invoke.
 */
export function untouchedLifecycle(at: Date) {
  return {
    status: 'pending_freeze',
    event_sequence: 1,
    dispute_reason: null,
    result_payload: null,
    frozen_at: null,
    accepted_at: null,
    delivered_at: null,
    confirmed_at: null,
    settled_at: null,
    delivery_deadline: null,
    auto_confirm_at: null,
    invoke_deadline: null,
    invoke_latency_ms: null,
    invoke_error: null,
    invoke_error_detail: null,
    created_at: at,
    updated_at: at,
  } satisfies Partial<TransactionRow>;
}

/**
 * Not enough money for a freeze, as the caller should hear it (4020), or null when the money is
 * there by now and the freeze should simply be tried again (see the comment in act, transactions.ts).
 */
export async function balanceRefusal(db: Knex, error: InsufficientBalance): Promise<AppError | null> {
  const [account] = await prepared<{ available: string }>(db, 'SELECT available FROM accounts WHERE id = ?', [error.accountId]);
  const available = BigInt(account?.available ?? 0);
  if (available >= error.required) return null;
  return new AppError('insufficient_balance', 'available balance is below the price', {
    currency: error.currency,
    available: formatAmount(available),
    required: formatAmount(error.required),
  });
}

/**
 * A purchase (or invoke) names a demand only of the buyer's own in its space (4040 otherwise).
 * Only then is it one more statement; a demand's owner and space never change, so nothing is locked.
 */
export async function checkDemandLink(trx: Knex, principal: Principal, demandId: string) {
  const [demand] = await prepared<{ owner_user_id: string; owner_type: 'agent' | 'human' }>(trx, 'SELECT owner_user_id, owner_type FROM demands WHERE id = ?', [
    demandId,
  ]);
  authorize(linkPurchaseTo, principal, demand, 'demand');
}
