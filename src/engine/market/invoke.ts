import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CallbackOutcome, callCallback, privateAddressRefusal, privateAddressSetting } from '../../callbacks/client.ts';
import { prepared as preparedQuery } from '../../db/prepared.ts';
import { withSingleStatement } from '../../db/transaction.ts';
import { formatAmount } from '../../domain/money.ts';
import { type PricingModel, transactionPrice } from '../../domain/pricing.ts';
import {
  assertBuyerCeiling,
  purchaseRead,
  splitPurchaseRead,
  giveBackUnlessWritten,
  planPurchaseCharge,
  takeCapabilityUsage,
  type TakenUsage,
  type Idempotency,
  type IdempotencyRequest,
  type Outcome,
  balanceRefusal,
  checkDemandLink,
  newTransactionRow,
  overdueInvoke,
  type ActionExtra,
  type Transitions,
  transactionView,
} from '../money/index.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { EventHub } from '../../events/hub.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { type TransactionRow, findTransaction } from '../../store/transactions.ts';
import { invokeCapability, authorize } from '../access/index.ts';
import { outboundNetwork, type EngineDependencies, type Principal } from '../common/index.ts';

/**
 * Invoke (decisions section 7, docs/decisions/money-and-escrow.md "Invoke"): buy and run a per-query capability in
 * one call. Three steps, and no database connection or lock is held while the seller's server
 * works:
 * 1. one statement inserts the transaction already frozen (with its agent budget take) and
 *    completes the idempotency key's claim with the transaction's id, after reads and the count of
 *    the capability's limits; the batcher may write it with other changes (group commit);
 * 2. the signed callback runs (src/callbacks/), bounded by the capability's timeout;
 * 3. one statement settles (a good answer) or fails and releases (anything else), as a
 *    compare-and-set from frozen, so a sweeper that released an overdue invoke wins over a late answer.
 * A retry with the same key (even concurrent) finds step 1's stored answer, waits for step 3 and
 * answers what the first request answered, from the row; the callback runs once.
 */
export interface InvokeCommand {
  input?: Record<string, unknown>;
  /** A2A sends (rpc/, engine/a2a): the buyer's session, v0.1 task id, need and note, as a purchase records them. */
  context_id?: string;
  client_task_id?: string;
  demand_id?: string;
  note?: string;
  /** The A2A conversation buying (unique: a conversation buys once). */
  conversation_id?: string;
  /** The most the buyer will pay, checked on the price the hold read and writes (4093 above it). */
  max_price?: bigint;
  /** The price an A2A conversation showed for this pick: the ceiling when no max_price was sent. */
  shown_price?: bigint;
}

/** Told the transaction's id once its hold committed (or was found by a retry), before the callback's outcome. */
export interface InvokeHooks {
  held?: (transactionId: string) => void;
}

export interface InvokeAnswer {
  transaction_id: string;
  result: Record<string, unknown> | null;
  charged_ut: string;
  latency_ms: number;
  status: 'settled';
}

interface PreparedCall {
  transactionId: string;
  url: string;
  secret: string;
  timeoutMs: number;
  payload: { transaction_id: string; capability_id: string; input: Record<string, unknown>; buyer_user_id: string };
}

export function createInvokeEngine(dependencies: EngineDependencies, idempotency: Idempotency, transitions: Transitions, hub: Pick<EventHub, 'nextEventOf'>) {
  const { db, now, config, log } = dependencies;
  const network = outboundNetwork(dependencies);

  async function invoke(
    principal: Principal,
    capabilityId: string,
    command: InvokeCommand,
    request: IdempotencyRequest | null,
    hooks: InvokeHooks = {},
  ): Promise<Outcome<InvokeAnswer>> {
    if (principal.caller_type !== 'agent') throw new AppError('forbidden', 'only agent callers (API key) may invoke');
    if (!request) {
      throw new AppError('validation_error', 'an idempotency key is required', {
        errors: [{ path: 'header.Idempotency-Key', message: 'agent callers must send an Idempotency-Key (or body.idempotency_key) to invoke' }],
      });
    }
    const startedAt = performance.now();
    const prepared: { call?: PreparedCall } = {};
    const held = await hold(principal, capabilityId, command, request, prepared);
    hooks.held?.(held.data.id);
    if (held.replayed || !prepared.call) return { data: await answerWhenDone(held.data.id), status: 200, replayed: true };
    return { data: await run(prepared.call, startedAt), status: 200, replayed: false };
  }

  /** Step 1, retried while another request holds the key's claim (4091) for a bounded time, or while a shortfall turns out not to be one. */
  async function hold(principal: Principal, capabilityId: string, command: InvokeCommand, request: IdempotencyRequest, prepared: { call?: PreparedCall }) {
    const waitUntil = performance.now() + limits.invokeClaimWaitMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await holdOnce(principal, capabilityId, command, request, prepared);
      } catch (error) {
        if (error instanceof InsufficientBalance) {
          const refusal = await balanceRefusal(db, error);
          if (refusal) throw refusal;
          if (attempt < limits.transactionRetriesMax) continue;
          throw new AppError('conflict', 'the balance kept changing concurrently; retry');
        }
        if (!(error instanceof AppError && error.errorName === 'idempotency_in_progress') || performance.now() > waitUntil) throw error;
        await sleep(limits.invokeWaitPollMs);
      }
    }
  }

  /**
   * The hold as ONE write statement, which the batcher can group with other changes (decisions
   * "Group commit for invoke holds"): the capability is read in the claim's statement, the demand
   * link, the buyer's ceiling and the agent budget's per-purchase bounds are reads, the capability's
   * usage is counted by its own upsert (given back when the purchase is not written), and one
   * change inserts the transaction already frozen with its budget take.
   */
  async function holdOnce(principal: Principal, capabilityId: string, command: InvokeCommand, request: IdempotencyRequest, prepared: { call?: PreparedCall }) {
    const capabilityRead = purchaseRead(capabilityId, principal.user_id);
    let taken: TakenUsage | undefined;
    return idempotency.run(
      principal,
      request,
      200,
      async (unit) => {
        const read = splitPurchaseRead(
          unit.prefetched
            ? (unit.prefetched.row ?? undefined)
            : (await preparedQuery<Record<string, unknown>>(unit.trx, capabilityRead.text, capabilityRead.bindings))[0],
        );
        const capability = authorize(invokeCapability, principal, read.capability, 'capability');
        if (command.demand_id) await checkDemandLink(unit.trx, principal, command.demand_id);
        const at = now();
        const price = transactionPrice(capability.pricing_model as PricingModel, BigInt(capability.price), undefined);
        assertBuyerCeiling(principal, capability, price, command, read.past);
        const timeoutMs = capability.callback_timeout_sec * 1000;
        const row: TransactionRow = {
          ...newTransactionRow(principal, { ...command, capability_id: capability.id }, capability, price, at, config.PLATFORM_FEE_BPS),
          // The system settles an invoke; an auto-accept step would only get in its way.
          auto_accept: false,
          invoke_deadline: new Date(at.getTime() + timeoutMs + limits.invokeDeadlineMarginMs),
        };
        // A person's own key spends within its agent budget: its bounds read here, the day's taken in the statement.
        const budget = await planPurchaseCharge(unit.trx, principal, row, capability, at);
        // Taken before the write; given back if the write certainly wrote nothing (a retry takes again).
        taken ??= await takeCapabilityUsage(db, capability, at);
        let frozen: TransactionRow;
        try {
          frozen = await transitions.insertMoved(unit, row, 'freeze', { principal }, budget ? { budget } : {});
        } catch (error) {
          const given = taken;
          taken = undefined;
          await giveBackUnlessWritten(db, given, error, log);
          throw error;
        }
        prepared.call = {
          transactionId: row.id,
          url: capability.callback_url!,
          secret: capability.callback_secret ?? '',
          timeoutMs,
          payload: { transaction_id: row.id, capability_id: capability.id, input: command.input ?? {}, buyer_user_id: principal.user_id },
        };
        return transactionView(frozen);
      },
      'one statement',
      capabilityRead,
    );
  }

  /** Steps 2 and 3: the call, then its outcome, recorded as a compare-and-set from frozen. */
  async function run(call: PreparedCall, startedAt: number): Promise<InvokeAnswer> {
    const outcome = await callCallback(call, network, Math.floor(now().getTime() / 1000));
    const latencyMs = Math.round(performance.now() - startedAt);
    if (outcome.kind !== 'answered')
      log.info('invoke callback failed', {
        transaction_id: call.transactionId,
        outcome: outcome.kind,
        reason: 'reason' in outcome ? outcome.reason : undefined,
      });
    const action = outcome.kind === 'answered' ? 'invoke_settle' : 'fail';
    await record(call.transactionId, action, { invoke: invokeRecord(outcome, latencyMs) });
    return answerOf((await findTransaction(db, call.transactionId))!);
  }

  function invokeRecord(outcome: CallbackOutcome, latencyMs: number): NonNullable<ActionExtra['invoke']> {
    if (outcome.kind === 'answered') return { latency_ms: latencyMs, error: null, error_detail: null, result: outcome.result };
    if (outcome.kind === 'timeout')
      return { latency_ms: latencyMs, error: 'callback_timeout', error_detail: 'the callback did not answer within callback_timeout_sec', result: null };
    return { latency_ms: latencyMs, error: 'callback_failed', error_detail: outcome.reason, result: null };
  }

  /** A move that lost to another (the sweeper released the invoke first) changes nothing: 4090 is expected. */
  async function record(id: string, action: 'invoke_settle' | 'fail', extra: ActionExtra) {
    try {
      await withSingleStatement(db, (unit) => transitions.move(unit, id, action, { system: 'system' }, extra));
    } catch (error) {
      if (!(error instanceof AppError && error.errorName === 'invalid_state_transition')) throw error;
    }
  }

  /**
   * A retry's answer: waits for the transaction's next event (heard from any instance through the
   * bus), reading the row again at a doubling interval in case a message was lost, until the first
   * request has recorded its outcome. Past the deadline the first request's server is gone, and
   * the retry releases the hold itself, as the sweeper would.
   */
  async function answerWhenDone(id: string): Promise<InvokeAnswer> {
    for (let checkMs: number = limits.invokeWaitCheckMinMs; ; checkMs = Math.min(checkMs * 2, limits.invokeWaitCheckMaxMs)) {
      const next = hub.nextEventOf(id, checkMs);
      try {
        const row = (await findTransaction(db, id))!;
        if (row.status !== 'frozen') return answerOf(row);
        if (row.invoke_deadline !== null && now() >= new Date(row.invoke_deadline)) await record(id, 'fail', { invoke: overdueInvoke });
        else await next.arrived;
      } finally {
        next.stop();
      }
    }
  }

  /** The answer a settled invoke gives, or the error a failed one throws (5020 / 5040, nothing charged). */
  function answerOf(row: TransactionRow): InvokeAnswer {
    if (row.status === 'settled') {
      return {
        transaction_id: row.id,
        result: row.result_payload,
        charged_ut: formatAmount(row.price),
        latency_ms: row.invoke_latency_ms ?? 0,
        status: 'settled',
      };
    }
    const errorName = row.invoke_error ?? 'callback_failed';
    const detail = row.invoke_error_detail ?? 'the callback failed';
    const setting = detail === privateAddressRefusal ? { setting: privateAddressSetting } : {};
    throw new AppError(errorName, detail, { transaction_id: row.id, charged_ut: '0.00', status: row.status, detail, ...setting });
  }

  return { invoke };
}

export type InvokeEngine = ReturnType<typeof createInvokeEngine>;
