import { type Actor, type Transition, type TransactionAction, type TransactionStatus, invalidTransition, nextState } from '../../domain/escrow.ts';
import { feeOf } from '../../domain/money.ts';
import { FreshClaimNotWritten, type UnitOfWork } from '../../db/transaction.ts';
import { claimIsHeld } from '../../store/claims.ts';
import { AppError, notFound } from '../../errors.ts';
import type { Publisher } from '../../events/publisher.ts';
import { systemAccountId, userAccountId } from '../../store/accounts.ts';
import type { Leg } from '../../store/ledger.ts';
import { type ChangeOutcome, type NewEvent, type PurchaseCheck, type StateChange, commitChange, isClientTaskIdTaken } from '../../store/change.ts';
import { shortfallOf } from '../../store/ledger.ts';
import { createBatcher } from './batcher.ts';
import { type TransactionRow, findTransaction } from '../../store/transactions.ts';
import { type EngineDependencies, type Principal, TtlCache } from '../common/index.ts';
import { jsonBytesOf, transactionEventView } from './views.ts';
import { type FreezeCharge, giveBackAgentBudget } from './budgets.ts';
import { giveBackUnpaidDay } from './capability-limits.ts';
import { limits } from '../../limits.ts';
import { authorizeAction, partyOf } from '../access/index.ts';

/** A change written: its outbox rows, and its task events when it has any. */
type Applied = Extract<ChangeOutcome, { kind: 'applied' }>;

export type Mover = { principal: Principal } | { system: 'system' | 'admin' };

export interface ActionExtra {
  result_payload?: Record<string, unknown>;
  reason?: string;
  /** The outcome of an invoke's callback, kept on the row so that a retry replays the answer. */
  invoke?: {
    latency_ms: number | null;
    error: 'callback_failed' | 'callback_timeout' | null;
    error_detail: string | null;
    result: Record<string, unknown> | null;
  };
  /** A freeze's agent budget charge, taken in the freeze's own statement (budgets.ts planFreezeCharge). */
  budget?: FreezeCharge;
}

const hoursMs = 60 * 60 * 1000;

/**
 * One move of the escrow state machine: read the current row, decide (party, state table,
 * guards), then write the compare-and-set, the money and the outbox events as one statement
 * (store/change.ts), and publish the events only after it committed. Every caller (REST,
 * JSON-RPC, sweeper, admin) goes through here.
 */
export function createTransitions({ config, db, log, now }: EngineDependencies, publisher: Publisher) {
  /** Changes written outside a database transaction share statements with concurrent ones (batcher.ts). */
  const batcher = createBatcher(db);

  /** Who the mover is in this transaction; who may see it is declared in access/transactions.ts. */
  function roleOf(row: TransactionRow | undefined, mover: Mover): Actor {
    if (!row) throw notFound('transaction');
    return 'system' in mover ? mover.system : partyOf(mover.principal, row).party;
  }

  function checkGuards(row: TransactionRow, step: Transition, at: Date) {
    const cancelTooEarly = step.action === 'cancel' && row.status === 'accepted' && (!row.delivery_deadline || at < new Date(row.delivery_deadline));
    const disputeTooLate = step.action === 'dispute' && row.auto_confirm_at !== null && at >= new Date(row.auto_confirm_at);
    const notYetDue = step.action === 'auto_confirm' && row.auto_confirm_at !== null && at < new Date(row.auto_confirm_at);
    // An invoke is the system's once frozen (its freeze commits with its creation) until its
    // callback's outcome is known: a buyer's cancel or a seller's accept or reject mid-call would
    // race the settlement of work already being done.
    const invokeInProgress = row.invoke_deadline !== null && step.actor !== 'system' && step.action !== 'freeze';
    if (cancelTooEarly || disputeTooLate || notYetDue || invokeInProgress) throw invalidTransition(row.status, step.action);
  }

  function changesFor(row: TransactionRow, step: Transition, extra: ActionExtra, at: Date): Partial<TransactionRow> {
    const changes: Partial<TransactionRow> = { status: step.to, updated_at: at };
    if (step.to === 'frozen') changes.frozen_at = at;
    if (step.to === 'accepted') {
      changes.accepted_at = at;
      // A task's delivery period, else the hours bought per hour, else the configured default.
      const hours = row.delivery_hours ?? row.booked_hours ?? config.DELIVERY_DEADLINE_HOURS;
      changes.delivery_deadline = new Date(at.getTime() + hours * hoursMs);
    }
    if (step.to === 'delivered') {
      changes.delivered_at = at;
      changes.result_payload = extra.result_payload ?? {};
      changes.auto_confirm_at = new Date(at.getTime() + config.AUTO_CONFIRM_HOURS * hoursMs);
    }
    if (step.to === 'disputed') changes.dispute_reason = extra.reason ?? null;
    if (step.action === 'invoke_settle') {
      changes.delivered_at = at;
      changes.result_payload = extra.invoke?.result ?? null;
    }
    if (extra.invoke) {
      changes.invoke_latency_ms = extra.invoke.latency_ms;
      changes.invoke_error = extra.invoke.error;
      changes.invoke_error_detail = extra.invoke.error_detail;
    }
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
      legs.push({
        ...base,
        accountId: userAccountId(row.seller_user_id, row.currency),
        bucket: 'available',
        amount: price - fee,
        type: 'income',
        description: 'Income from a sale',
      });
      legs.push({
        ...base,
        accountId: systemAccountId('platform_fee', row.currency),
        bucket: 'available',
        amount: fee,
        type: 'fee',
        description: 'Platform fee',
      });
    }
    // A free purchase or a zero fee moves nothing: zero legs are left out rather than recorded.
    return legs.filter((leg) => leg.amount !== 0n);
  }

  const eventOf = (action: string, previous: TransactionStatus | null, row: TransactionRow): NewEvent => ({
    type: `transaction.${row.status}`,
    // Large input and result_payload stay in the row only: events and stored responses reference them.
    payload: { action, previous_status: previous, transaction: transactionEventView(row) },
  });

  /**
   * Plans a move as one state change: the row after it, the money legs and the events. A freeze
   * of a capability that auto-accepts at this price takes the accept step in the same change, so
   * nobody ever sees a frozen transaction that should have been accepted.
   */
  function planMove(row: TransactionRow, step: Transition, extra: ActionExtra, at: Date) {
    const steps = step.to === 'frozen' && row.auto_accept ? [step, nextState('frozen', 'accept')] : [step];
    let current = row;
    const set: Partial<TransactionRow> = {};
    const legs: Leg[] = [];
    const events: NewEvent[] = [];
    for (const each of steps) {
      const changes = changesFor(current, each, extra, at);
      const next: TransactionRow = { ...current, ...changes, event_sequence: current.event_sequence + 1 };
      Object.assign(set, changes);
      legs.push(...legsFor(current, each));
      events.push(eventOf(each.action, current.status, next));
      current = next;
    }
    const change: StateChange = {
      transactionId: row.id,
      buyerUserId: row.buyer_user_id,
      sellerUserId: row.seller_user_id,
      write: { kind: 'update', fromStatus: row.status, fromSequence: row.event_sequence, set },
      legs,
      events,
      at,
      ...(extra.budget && step.money === 'freeze' ? { budget: extra.budget.take } : {}),
    };
    return { change, after: current };
  }

  /**
   * Runs the change and schedules its events for publishing once it is committed. Under an
   * idempotency key the same statement stores the response.
   */
  async function commit(unit: UnitOfWork, change: StateChange, budget?: FreezeCharge, response?: unknown): Promise<Applied | null> {
    const { claim } = unit;
    // The last event carries the view of the row after the change: the response, computed once,
    // unless the change answers with more (an acceptance). Like the event, it references a large
    // input or result_payload; a replay fills them in.
    const responseBody = response ?? change.events.at(-1)!.payload.transaction;
    if (claim?.fresh) {
      const { scopeHash, token, responseStatus, fresh } = claim;
      change.freshClaim = { scopeHash, token, responseStatus, responseBody, ...fresh };
    } else if (claim) change.claim = { ...claim, responseBody };
    let outcome;
    try {
      // Single-statement work (the unit is the pool itself) goes through the batcher; work inside
      // a database transaction of its own writes its change there.
      outcome = unit.trx === db ? await batcher.submit(change) : await commitChange(unit.trx, change);
    } catch (error) {
      // Not enough money (InsufficientBalance) goes up to transactions.act, which answers it.
      const shortfall = shortfallOf(error, change.legs);
      if (shortfall) throw shortfall;
      if (isClientTaskIdTaken(error)) throw await taskIdTaken(unit);
      throw error;
    }
    if (outcome.kind === 'claim_lost') throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
    if (outcome.kind === 'key_taken') throw new FreshClaimNotWritten('key_taken');
    if (outcome.kind === 'stale') return null;
    // The day's bound refused the budget charge: nothing of the change was written.
    if (outcome.kind === 'over_budget') throw await budget!.refuse();
    if (claim) claim.completed = true;
    for (const event of outcome.events) unit.afterCommit(() => publisher.publish(event));
    return outcome;
  }

  /**
   * The rows this instance last wrote, so that the next move of a transaction (usually soon after,
   * by the same agents) needs no read before its one statement. A cached row may be stale (another
   * instance moved the transaction): the compare-and-set on (status, event_sequence) then matches
   * nothing and the move reads the row again. A refusal (4030, 4090) is only ever decided on a row
   * just read, never on a cached one. Rows with large payloads are not kept, to bound memory.
   */
  const recentRows = new TtlCache<TransactionRow>(limits.transactionRowCacheTtlMs, limits.transactionRowCacheEntriesMax);

  function remember(unit: UnitOfWork, row: TransactionRow) {
    const payloadBytes = jsonBytesOf(row.input) + jsonBytesOf(row.result_payload);
    // Only once committed: a row of a rolled-back transaction must never be decided on.
    if (payloadBytes <= limits.transactionRowCachePayloadBytesMax) unit.afterCommit(() => recentRows.set(row.id, row));
  }

  /** Decides the step for `mover` from `row`: who may act first (4030 before 4090), then state and guards. */
  function decide(row: TransactionRow | undefined, action: TransactionAction, mover: Mover, at: Date): Transition {
    authorizeAction(roleOf(row, mover), action, row!.status);
    const step = nextState(row!.status, action);
    checkGuards(row!, step, at);
    return step;
  }

  /** Applies `action` to transaction `id` for `mover`; re-decides if another request won the race. */
  async function move(unit: UnitOfWork, id: string, action: TransactionAction, mover: Mover, extra: ActionExtra = {}): Promise<TransactionRow> {
    // A cached row costs no attempt: when it turns out stale, the move simply reads the row.
    let cached = recentRows.get(id);
    let attempts = 0;
    while (attempts < limits.compareAndSetAttemptsMax) {
      const fromCache = cached !== undefined;
      const row = cached ?? (await findTransaction(unit.trx, id));
      cached = undefined;
      if (!fromCache) attempts++;
      const at = now();
      let step: Transition;
      try {
        step = decide(row, action, mover, at);
      } catch (error) {
        if (!fromCache) throw error;
        recentRows.delete(id);
        continue;
      }
      const { change, after } = planMove(row!, step, extra, at);
      if (await commit(unit, change, extra.budget)) {
        remember(unit, after);
        // A release gives back to an agent budget what the purchase was charged (budgets.ts), once committed.
        if (step.money === 'release') unit.afterCommit(() => giveBackAgentBudget(db, id));
        // A purchase given up before it was paid gives back its unit of the capability's day (capability-limits.ts).
        if (step.from === 'pending_freeze' && step.action === 'cancel') unit.afterCommit(() => giveBackUnpaidDay(db, after, log));
        return after;
      }
      // Another request moved the transaction first, or the cached row was stale: read it again
      // (and stop offering the stale row to later moves).
      if (fromCache) recentRows.delete(id);
    }
    throw new AppError('conflict', 'the transaction changed concurrently; retry');
  }

  /**
   * Inserts a new transaction with its creation event, in one statement. A purchase decided on a
   * cached read passes `check`: the statement writes only if that read still holds.
   */
  async function insert(unit: UnitOfWork, row: TransactionRow, check?: PurchaseCheck): Promise<TransactionRow> {
    const change: StateChange = {
      transactionId: row.id,
      buyerUserId: row.buyer_user_id,
      sellerUserId: row.seller_user_id,
      write: { kind: 'insert', values: { ...row } },
      legs: [],
      events: [eventOf('create', null, row)],
      at: row.created_at,
      ...(check ? { check } : {}),
    };
    // An insert has no compare-and-set to lose: only a check of its cached read can keep it from being written.
    if (!(await commit(unit, change))) {
      if (check) throw new FreshClaimNotWritten('stale');
      throw new Error('a transaction insert wrote nothing');
    }
    remember(unit, row);
    return row;
  }

  /**
   * Inserts a new transaction already moved by `action` (an invoke's hold: created and frozen) as
   * ONE change, which the batcher can group with others: the row as it is after the move, the
   * creation event and the move's, the move's legs and its agent budget take. Decided on the new
   * row as a move of it would be; not enough money fails the statement as a freeze's does
   * (InsufficientBalance), and nothing of the purchase is written.
   */
  async function insertMoved(unit: UnitOfWork, row: TransactionRow, action: TransactionAction, mover: Mover, extra: ActionExtra = {}): Promise<TransactionRow> {
    const { change, after } = planInsertMoved(row, action, mover, extra);
    // An insert has no compare-and-set to lose: anything but applied or over_budget is a failure of its own.
    if (!(await commit(unit, change, extra.budget))) throw new Error('a transaction insert wrote nothing');
    remember(unit, after);
    return after;
  }

  /** The change of a new transaction already moved by `action`, not yet written, and the row after it. */
  function planInsertMoved(row: TransactionRow, action: TransactionAction, mover: Mover, extra: ActionExtra = {}) {
    const step = decide(row, action, mover, row.created_at);
    const { change: moved, after } = planMove(row, step, extra, row.created_at);
    const change: StateChange = { ...moved, write: { kind: 'insert', values: { ...after } }, events: [eventOf('create', null, row), ...moved.events] };
    return { change, after };
  }

  /**
   * Writes a planned insert with parts of its own (an application's acceptance adds its task's,
   * engine/work/task-acceptance.ts) and `response` as its idempotent answer: the outcome, or null
   * when a compare-and-set of those parts found its row changed, so that nothing was written.
   */
  async function commitPlanned(unit: UnitOfWork, planned: { change: StateChange; after: TransactionRow }, response: unknown, budget?: FreezeCharge) {
    const applied = await commit(unit, planned.change, budget, response);
    if (applied) remember(unit, planned.after);
    return applied;
  }

  // submit: other single-statement changes (a task's publish, engine/work/task-publish.ts) share the same batches.
  return { move, insert, insertMoved, planInsertMoved, commitPlanned, submit: batcher.submit, batchStats: batcher.stats };
}

export type Transitions = ReturnType<typeof createTransitions>;

/**
 * The client task id is already a task's. When this request's idempotency claim was taken over
 * by a retry, that task is the retry's, made under the same key: the answer is 4091 (the retry
 * owns the request; ask again with the key for its outcome), not "choose a new id".
 */
export async function taskIdTaken(unit: UnitOfWork): Promise<AppError> {
  if (unit.claim && !(await claimIsHeld(unit.trx, unit.claim))) {
    return new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }
  return new AppError('conflict', 'a task with this id already exists; choose a new id');
}
