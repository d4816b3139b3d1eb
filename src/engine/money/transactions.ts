import type { TransactionAction } from '../../domain/escrow.ts';
import { type PricingModel, transactionPrice } from '../../domain/pricing.ts';
import { prepared } from '../../db/prepared.ts';
import { AppError } from '../../errors.ts';
import { buyCapability, authorize } from '../access/index.ts';
import type { TransactionView } from '../../schemas/transactions.ts';
import { type EngineDependencies, type Principal, TtlCache } from '../common/index.ts';
import { type Idempotency, type IdempotencyRequest, type Outcome, fingerprintOf } from './idempotency.ts';
import { type ActionExtra, type Transitions, taskIdTaken } from './transitions.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { jsonBytesOf, transactionView } from './views.ts';
import { assertBuyerCeiling, purchaseCheckOf, purchaseRead, splitPurchaseRead, withLastPurchase } from './ceilings.ts';
import { checkPurchase, planFreezeCharge } from './budgets.ts';
import { limits } from '../../limits.ts';
import { countedDayOf, giveBackUnlessWritten, type TakenUsage, takeCapabilityUsage } from './capability-limits.ts';
import { balanceRefusal, checkDemandLink, type CreateTransactionCommand, newTransactionRow } from './new-transactions.ts';
import { createTransactionReads } from './transaction-reads.ts';
import { createTransactionSweeps } from './transaction-sweeps.ts';

export type PartyAction = Extract<TransactionAction, 'freeze' | 'accept' | 'reject' | 'deliver' | 'confirm' | 'cancel' | 'dispute'>;

/** The use cases of marketplace transactions, shared by REST and every JSON-RPC generation. */
export function createTransactionEngine(dependencies: EngineDependencies, idempotency: Idempotency, transitions: Transitions) {
  const { db, now } = dependencies;
  const { completed, completeView, get, findForCaller, list, agentTransactions } = createTransactionReads(db);
  const { autoConfirmDue, failOverdueInvokes } = createTransactionSweeps(dependencies, transitions);
  /**
   * Each buyer's last purchase read of a capability, as it stands after the purchase: a repeat
   * purchase under a key decides on it without a read, and its write statement checks it and
   * claims the key (idempotency.ts, fresh claims). A stale copy costs one statement that writes nothing.
   */
  const purchaseReads = new TtlCache<Record<string, unknown>>(limits.purchaseReadCacheTtlMs, limits.purchaseReadCacheEntriesMax);

  async function create(principal: Principal, command: CreateTransactionCommand, request: IdempotencyRequest | null): Promise<Outcome<TransactionView>> {
    if (principal.caller_type === 'agent' && !request) {
      throw new AppError('validation_error', 'an idempotency key is required', {
        errors: [{ path: 'header.Idempotency-Key', message: 'agent callers must send an Idempotency-Key when creating a transaction' }],
      });
    }
    const capabilityRead = purchaseRead(command.capability_id, principal.user_id);
    const readKey = `${principal.user_id}:${command.capability_id}`;
    // A client task id is checked by a read of its own (below): such a purchase takes the regular way.
    const cachedRow = command.client_task_id ? undefined : purchaseReads.get(readKey);
    let taken: TakenUsage | undefined;
    return completed(
      await idempotency.run<TransactionView>(
        principal,
        request,
        201,
        async (unit) => {
          // Under a key the claim's statement has read the capability already (unit.prefetched).
          const readRow = unit.prefetched
            ? (unit.prefetched.row ?? undefined)
            : (await prepared<Record<string, unknown>>(unit.trx, capabilityRead.text, capabilityRead.bindings))[0];
          const read = splitPurchaseRead(readRow);
          const capability = authorize(buyCapability, principal, read.capability, 'capability');
          if (command.demand_id) await checkDemandLink(unit.trx, principal, command.demand_id);
          const price = transactionPrice(capability.pricing_model as PricingModel, BigInt(capability.price), command.booked_hours);
          assertBuyerCeiling(principal, capability, price, command, read.past);
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
            const row = {
              ...newTransactionRow(principal, command, capability, price, at, dependencies.config.PLATFORM_FEE_BPS),
              counted_day_start: countedDayOf(taken),
            };
            const created = await transitions.insert(unit, row, unit.prefetched?.cached ? purchaseCheckOf(readRow!, principal.user_id) : undefined);
            if (jsonBytesOf(readRow!) <= limits.purchaseReadCacheRowBytesMax)
              unit.afterCommit(() => purchaseReads.set(readKey, withLastPurchase(readRow!, created)));
            return transactionView(created);
          } catch (error) {
            const given = taken;
            taken = undefined;
            await giveBackUnlessWritten(db, given, error, dependencies.log);
            throw error;
          }
        },
        'one statement',
        { ...capabilityRead, ...(cachedRow ? { cached: { row: cachedRow, forget: () => purchaseReads.delete(readKey) } } : {}) },
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

  /** The system marks a transaction failed (a capability callback failed) and releases the funds. */
  function fail(id: string) {
    return idempotency.run(null, null, 200, async (unit) => transactionView(await transitions.move(unit, id, 'fail', { system: 'system' })), 'one statement');
  }

  return { create, purchase, act, resolve, fail, get, list, agentTransactions, findForCaller, completeView, autoConfirmDue, failOverdueInvokes };
}

export type TransactionEngine = ReturnType<typeof createTransactionEngine>;
