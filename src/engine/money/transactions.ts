import { randomUUID } from 'node:crypto';
import type { TransactionAction } from '../../domain/escrow.ts';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { type PricingModel, transactionPrice } from '../../domain/pricing.ts';
import { prepared } from '../../db/prepared.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, notFound } from '../../errors.ts';
import { buyCapability, linkPurchaseTo, authorize, canSee, partyOf } from '../access/index.ts';
import type { TransactionEventView, TransactionView } from '../../schemas/transactions.ts';
import { type TransactionRow, findTransaction } from '../../store/transactions.ts';
import { createTransactionLists } from './transaction-lists.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { type Idempotency, type IdempotencyRequest, type Outcome, fingerprintOf } from './idempotency.ts';
import { type ActionExtra, type Transitions, taskIdTaken } from './transitions.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { transactionView, withOmittedFields } from './views.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import { assertBuyerCeiling } from './ceilings.ts';
import { checkPurchase, planFreezeCharge } from './budgets.ts';
import { isUuid } from '../../domain/ids.ts';
import { limits } from '../../limits.ts';
import type { Knex } from 'knex';
import { giveBackUnlessWritten, type TakenUsage, takeCapabilityUsage } from './capability-limits.ts';

/** The use cases of marketplace transactions, shared by REST and every JSON-RPC generation. */
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
    status: 'pending_freeze',
    note: command.note ?? null,
    client_task_id: command.client_task_id ?? null,
    conversation_id: command.conversation_id ?? null,
    fee_bps: feeBps,
    dispute_reason: null,
    input: command.input ?? null,
    result_payload: null,
    event_sequence: 1,
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
  };
}

/**
 * Not enough money for a freeze, as the caller should hear it (4020), or null when the money is
 * there by now and the freeze should simply be tried again (see the comment in act).
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

/** How the sweeper (or a waiting retry) records an invoke whose callback outlived its deadline. */
export const overdueInvoke = {
  latency_ms: null,
  error: 'callback_timeout',
  error_detail: 'the invoke outlived its deadline without an answer',
  result: null,
} as const satisfies ActionExtra['invoke'];

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

export type PartyAction = Extract<TransactionAction, 'freeze' | 'accept' | 'reject' | 'deliver' | 'confirm' | 'cancel' | 'dispute'>;

export function createTransactionEngine(dependencies: EngineDependencies, idempotency: Idempotency, transitions: Transitions) {
  const { db, now } = dependencies;

  /**
   * A stored response is the change's event view, which leaves a large input or result_payload
   * out. Neither field ever changes once set, so the replay completes it from the row and returns
   * exactly what the first response did.
   */
  async function completed(outcome: Outcome<TransactionEventView>): Promise<Outcome<TransactionView>> {
    if (!outcome.replayed || !outcome.data.omitted_fields) return outcome;
    const row = await findTransaction(db, outcome.data.id);
    return { ...outcome, data: withOmittedFields(outcome.data, row!) };
  }

  /** An event's view with what it left out read from the transaction, for a party of it. */
  async function completeView(principal: Principal, view: TransactionEventView): Promise<TransactionView> {
    return view.omitted_fields ? get(principal, view.id) : view;
  }

  async function create(principal: Principal, command: CreateTransactionCommand, request: IdempotencyRequest | null): Promise<Outcome<TransactionView>> {
    if (principal.caller_type === 'agent' && !request) {
      throw new AppError('validation_error', 'an idempotency key is required', {
        errors: [{ path: 'header.Idempotency-Key', message: 'agent callers must send an Idempotency-Key when creating a transaction' }],
      });
    }
    const capabilityRead = { text: 'SELECT * FROM capabilities WHERE id = ?', bindings: [command.capability_id] };
    let taken: TakenUsage | undefined;
    return completed(
      await idempotency.run<TransactionView>(
        principal,
        request,
        201,
        async (unit) => {
          // Under a key the claim's statement has read the capability already (unit.prefetched).
          const read = unit.prefetched
            ? ((unit.prefetched.row ?? undefined) as CapabilityRow | undefined)
            : (await prepared<CapabilityRow>(unit.trx, capabilityRead.text, capabilityRead.bindings))[0];
          const capability = authorize(buyCapability, principal, read, 'capability');
          if (command.demand_id) await checkDemandLink(unit.trx, principal, command.demand_id);
          const price = transactionPrice(capability.pricing_model as PricingModel, BigInt(capability.price), command.booked_hours);
          await assertBuyerCeiling(unit.trx, principal, capability, price, command);
          const at = now();
          // An agent budget that already refuses this purchase creates nothing; the freeze decides (budgets.ts).
          await checkPurchase(unit.trx, principal, capability, price, at);
          if (
            command.client_task_id &&
            (await unit.trx('transactions').where({ buyer_user_id: principal.user_id, client_task_id: command.client_task_id }).first('id'))
          ) {
            // The idempotency key (24 h) has expired but the task id lives on: it names that task
            // (unless a retry took this request's claim over and made it: then 4091).
            throw await taskIdTaken(unit);
          }
          // Taken before the write; given back if the write certainly wrote nothing (a retry takes again).
          taken ??= await takeCapabilityUsage(db, capability, at);
          try {
            return transactionView(
              await transitions.insert(unit, newTransactionRow(principal, command, capability, price, at, dependencies.config.PLATFORM_FEE_BPS)),
            );
          } catch (error) {
            const given = taken;
            taken = undefined;
            await giveBackUnlessWritten(db, given, error, dependencies.log);
            throw error;
          }
        },
        'one statement',
        capabilityRead,
      ),
    );
  }

  /**
   * Buy in one step, as agent-to-agent clients do: create, then freeze. Both steps are keyed by
   * `key`, so a resent message replays the create and freezes only if the first freeze did not
   * happen. A failed freeze (4020) leaves the transaction in pending_freeze with no money moved;
   * it is returned with the error so the caller can say where things stand.
   */
  async function purchase(principal: Principal, command: CreateTransactionCommand, key: string): Promise<{ view: TransactionView; failure?: AppError }> {
    const created = await create(principal, command, { key, operation: 'purchase create', fingerprint: fingerprintOf(command) });
    const id = created.data.id;
    if (created.replayed) {
      const current = await get(principal, id);
      if (current.status !== 'pending_freeze') return { view: current };
    }
    try {
      const frozen = await act(principal, id, 'freeze', {}, { key, operation: 'purchase freeze', fingerprint: fingerprintOf({ transaction_id: id }) });
      return { view: frozen.replayed ? await get(principal, id) : frozen.data };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const current = await get(principal, id);
      // A twin of this purchase froze it first (a conversation's parallel pick freezes the same
      // transaction without this key): the purchase succeeded, and saying 4090 would be wrong.
      if (error.errorName === 'invalid_state_transition' && !['pending_freeze', 'cancelled_by_buyer'].includes(current.status)) return { view: current };
      return { view: current, failure: error };
    }
  }

  /** A party's action (freeze, accept, reject, deliver, confirm, cancel, dispute). */
  async function act(principal: Principal, id: string, action: PartyAction, extra: ActionExtra, request: IdempotencyRequest | null) {
    // A freeze by a person's own key is charged to its agent budget in the freeze's own statement,
    // which can share a group commit with others (budgets.ts planFreezeCharge, store/change.ts).
    const budgeted = action === 'freeze' && Boolean(principal.budget_key_id);
    for (let attempt = 1; ; attempt++) {
      try {
        return await completed(
          await idempotency.run(
            principal,
            request,
            200,
            async (unit) => {
              const budget = budgeted ? await planFreezeCharge(unit.trx, principal, id, now()) : undefined;
              return transactionView(await transitions.move(unit, id, action, { principal }, budget ? { ...extra, budget } : extra));
            },
            'one statement',
          ),
        );
      } catch (error) {
        if (!(error instanceof InsufficientBalance)) throw error;
        const refusal = await balanceRefusal(db, error);
        // PostgreSQL checks the CHECK constraint against the balance as the statement's snapshot
        // saw it, before re-reading a row that another transaction changed while this statement
        // waited for its lock. A credit that committed meanwhile can therefore fail the freeze
        // although the money is there now: then the freeze is simply tried again.
        if (refusal) throw refusal;
        if (attempt < limits.transactionRetriesMax) continue;
        throw new AppError('conflict', 'the balance kept changing concurrently; retry');
      }
    }
  }

  /** An operator settles a dispute for the seller or refunds the buyer. */
  async function resolve(id: string, outcome: 'settle' | 'refund', request: IdempotencyRequest | null) {
    const action = outcome === 'settle' ? 'resolve_settle' : 'resolve_refund';
    return completed(
      await idempotency.run(
        null,
        request,
        200,
        async (unit) => transactionView(await transitions.move(unit, id, action, { system: 'admin' })),
        'one statement',
      ),
    );
  }

  /**
   * Finds the transaction a caller means by an id that is either the transaction's own id or a
   * task id the caller chose as buyer (A2A v0.1). Anything the caller may not see is 4040.
   */
  async function findForCaller(principal: Principal, idOrClientTaskId: string): Promise<TransactionView> {
    // A client task id names a task only among the buyer's own; who may see it is the usual rule.
    const byClientId = await db<TransactionRow>('transactions').where({ buyer_user_id: principal.user_id, client_task_id: idOrClientTaskId }).first();
    if (byClientId && canSee(principal, byClientId)) return transactionView(byClientId);
    if (!isUuid(idOrClientTaskId)) throw notFound('transaction');
    return get(principal, idOrClientTaskId.toLowerCase());
  }

  /** The system marks a transaction failed (a capability callback failed) and releases the funds. */
  function fail(id: string) {
    return idempotency.run(null, null, 200, async (unit) => transactionView(await transitions.move(unit, id, 'fail', { system: 'system' })), 'one statement');
  }

  async function get(principal: Principal, id: string): Promise<TransactionView> {
    return transactionView(partyOf(principal, await findTransaction(db, id)).row);
  }

  const { list, agentTransactions } = createTransactionLists(db);

  /**
   * Used by the sweeper: claims one due row with SKIP LOCKED (another instance takes another row)
   * and applies `action` to it as the system. A failure is reported with the row's id so the
   * sweeper can pass over that row instead of retrying it forever.
   */
  async function sweepNext(
    due: (query: Knex.QueryBuilder) => Knex.QueryBuilder,
    orderColumn: string,
    action: 'auto_confirm' | 'fail',
    extra: ActionExtra,
    skipIds: string[],
  ): Promise<{ id: string; error?: unknown } | null> {
    let claimedId: string | null = null;
    try {
      return await withTransaction(db, async (unit) => {
        const row = await due(unit.trx('transactions')).whereNotIn('id', skipIds).orderBy(orderColumn).first('id').forUpdate().skipLocked();
        if (!row) return null;
        claimedId = row.id as string;
        await transitions.move(unit, claimedId, action, { system: 'system' }, extra);
        return { id: claimedId };
      });
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- claimedId is set inside the transaction callback before a later step may throw
      if (claimedId === null) throw error;
      return { id: claimedId, error };
    }
  }

  /** Settles one delivered transaction whose auto_confirm_at has passed. */
  const autoConfirmNextDue = (skipIds: string[] = []) =>
    sweepNext((query) => query.where({ status: 'delivered' }).where('auto_confirm_at', '<=', now()), 'auto_confirm_at', 'auto_confirm', {}, skipIds);

  /**
   * Fails one invoke whose deadline has passed while it is still frozen (its server died during
   * the call), releasing the funds. A late answer of that callback then finds the transaction
   * failed and cannot settle it: settling is a compare-and-set from frozen.
   */
  const failNextOverdueInvoke = (skipIds: string[] = []) =>
    sweepNext(
      (query) => query.where({ status: 'frozen' }).whereNotNull('invoke_deadline').where('invoke_deadline', '<=', now()),
      'invoke_deadline',
      'fail',
      { invoke: overdueInvoke },
      skipIds,
    );

  return { create, purchase, act, resolve, fail, get, list, agentTransactions, findForCaller, completeView, autoConfirmNextDue, failNextOverdueInvoke };
}

export type TransactionEngine = ReturnType<typeof createTransactionEngine>;
