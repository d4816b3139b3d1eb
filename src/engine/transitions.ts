import { type Actor, type Transition, type TransactionAction, actorOfAction, invalidTransition, nextState } from '../domain/escrow.ts';
import { feeOf, formatAmount } from '../domain/money.ts';
import type { UnitOfWork } from '../db/transaction.ts';
import { AppError, forbidden, notFound } from '../errors.ts';
import type { Publisher } from '../events/publisher.ts';
import { InsufficientBalance, type Leg, applyMovement, systemAccountId, userAccountId } from '../store/accounts.ts';
import { appendEvent } from '../store/outbox.ts';
import { type TransactionRow, compareAndSetStatus, findTransaction } from '../store/transactions.ts';
import type { EngineDependencies, Principal } from './dependencies.ts';
import { transactionView } from './views.ts';
import { limits } from '../limits.ts';

/**
 * One move of the escrow state machine inside one database transaction: decide from the current
 * row, compare-and-set the status, move the money, write the outbox event, and publish it only
 * after COMMIT. Every caller (REST, JSON-RPC, sweeper, admin) goes through here.
 */
export type Mover = { principal: Principal } | { system: 'system' | 'admin' };

export interface ActionExtra {
  result_payload?: Record<string, unknown>;
  reason?: string;
}

const hoursMs = 60 * 60 * 1000;

export function createTransitions({ config, now }: EngineDependencies, publisher: Publisher) {
  function roleOf(row: TransactionRow | undefined, mover: Mover): Actor {
    if ('system' in mover) {
      if (!row) throw notFound('transaction');
      return mover.system;
    }
    const { principal } = mover;
    // A transaction of the other space, or of other users, is invisible: 4040, never 4030.
    if (!row || row.space !== principal.caller_type) throw notFound('transaction');
    if (row.buyer_user_id === principal.user_id) return 'buyer';
    if (row.seller_user_id === principal.user_id) return 'seller';
    throw notFound('transaction');
  }

  function checkGuards(row: TransactionRow, step: Transition, at: Date) {
    const cancelTooEarly = step.action === 'cancel' && row.status === 'accepted' && (!row.delivery_deadline || at < new Date(row.delivery_deadline));
    const disputeTooLate = step.action === 'dispute' && row.auto_confirm_at !== null && at >= new Date(row.auto_confirm_at);
    const notYetDue = step.action === 'auto_confirm' && row.auto_confirm_at !== null && at < new Date(row.auto_confirm_at);
    if (cancelTooEarly || disputeTooLate || notYetDue) throw invalidTransition(row.status, step.action);
  }

  function changesFor(row: TransactionRow, step: Transition, extra: ActionExtra, at: Date): Partial<TransactionRow> {
    const changes: Partial<TransactionRow> = { status: step.to, updated_at: at };
    if (step.to === 'frozen') changes.frozen_at = at;
    if (step.to === 'accepted') {
      changes.accepted_at = at;
      changes.delivery_deadline = new Date(at.getTime() + (row.booked_hours ?? config.DELIVERY_DEADLINE_HOURS) * hoursMs);
    }
    if (step.to === 'delivered') {
      changes.delivered_at = at;
      changes.result_payload = JSON.stringify(extra.result_payload ?? {}) as never;
      changes.auto_confirm_at = new Date(at.getTime() + config.AUTO_CONFIRM_HOURS * hoursMs);
    }
    if (step.to === 'disputed') changes.dispute_reason = extra.reason ?? null;
    if (step.to === 'settled') {
      changes.confirmed_at = at;
      changes.settled_at = at;
    }
    return changes;
  }

  function legsFor(row: TransactionRow, step: Transition): Leg[] {
    const price = BigInt(row.price);
    const buyer = userAccountId(row.buyer_user_id, row.currency);
    const base = { currency: row.currency };
    const legs: Leg[] = [];
    if (step.money === 'freeze') {
      legs.push({ ...base, accountId: buyer, bucket: 'available', amount: -price, type: 'freeze', description: 'Funds frozen for a purchase' });
      legs.push({ ...base, accountId: buyer, bucket: 'frozen', amount: price, type: 'freeze', description: 'Funds frozen for a purchase' });
    } else if (step.money === 'release') {
      const type = step.action === 'resolve_refund' ? 'refund' : 'unfreeze';
      legs.push({ ...base, accountId: buyer, bucket: 'frozen', amount: -price, type, description: `Funds released (${step.to})` });
      legs.push({ ...base, accountId: buyer, bucket: 'available', amount: price, type, description: `Funds released (${step.to})` });
    } else if (step.money === 'settle') {
      // The fee rate is the one agreed at purchase, not whatever the configuration says today.
      const fee = feeOf(price, row.fee_bps);
      legs.push({ ...base, accountId: buyer, bucket: 'frozen', amount: -price, type: 'expense', description: 'Payment for a purchase' });
      legs.push({ ...base, accountId: userAccountId(row.seller_user_id, row.currency), bucket: 'available', amount: price - fee, type: 'income', description: 'Income from a sale' });
      legs.push({ ...base, accountId: systemAccountId('platform_fee', row.currency), bucket: 'available', amount: fee, type: 'fee', description: 'Platform fee' });
    }
    // A free purchase or a zero fee moves nothing: zero legs are left out rather than recorded.
    return legs.filter((leg) => leg.amount !== 0n);
  }

  async function moveMoney(unit: UnitOfWork, row: TransactionRow, step: Transition, at: Date) {
    const legs = legsFor(row, step);
    if (legs.length === 0) return;
    const outcome = await applyMovement(unit.trx, legs, row.id, at);
    if (outcome instanceof InsufficientBalance) {
      throw new AppError('insufficient_balance', 'available balance is below the price', {
        currency: outcome.currency,
        available: formatAmount(outcome.available),
        required: formatAmount(outcome.required),
      });
    }
  }

  /** Writes the outbox event for the row's new state and publishes it after COMMIT. */
  async function record(unit: UnitOfWork, row: TransactionRow, action: string, previous: string | null, at: Date) {
    const view = transactionView(row);
    const event = await appendEvent(unit.trx, row, `transaction.${row.status}`, { action, previous_status: previous, transaction: view }, at);
    unit.afterCommit(() => publisher.publish(event));
  }

  async function applyStep(unit: UnitOfWork, row: TransactionRow, step: Transition, extra: ActionExtra, at: Date) {
    const updated = await compareAndSetStatus(unit.trx, row.id, row.status, changesFor(row, step, extra, at));
    if (!updated) return undefined;
    await moveMoney(unit, updated, step, at);
    await record(unit, updated, step.action, row.status, at);
    return updated;
  }

  /** Applies `action` to transaction `id` for `mover`; re-decides if another request won the race. */
  async function move(unit: UnitOfWork, id: string, action: TransactionAction, mover: Mover, extra: ActionExtra = {}): Promise<TransactionRow> {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const row = await findTransaction(unit.trx, id);
      const role = roleOf(row, mover);
      // Who may act is checked before the state, so a party learns "not yours" (4030) rather
      // than a state error for an action it could never take.
      const expectedActor = actorOfAction[action];
      if (expectedActor !== role) {
        throw role === 'system' || role === 'admin' ? invalidTransition(row!.status, action) : forbidden(`only the ${expectedActor} may ${action}`);
      }
      const step = nextState(row!.status, action);
      const at = now();
      checkGuards(row!, step, at);
      const updated = await applyStep(unit, row!, step, extra, at);
      if (!updated) continue;
      // A capability that auto-accepts at this price is accepted in the same database transaction.
      if (step.to === 'frozen' && updated.auto_accept) {
        return (await applyStep(unit, updated, nextState('frozen', 'accept'), {}, at)) ?? updated;
      }
      return updated;
    }
    throw new AppError('conflict', 'the transaction changed concurrently; retry');
  }

  return { move, record };
}

export type Transitions = ReturnType<typeof createTransitions>;
