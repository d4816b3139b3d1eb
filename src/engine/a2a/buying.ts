import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { isUuid } from '../../domain/ids.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { TransactionView } from '../../schemas/transactions.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { fingerprintOf, type CreateTransactionCommand, type TransactionEngine } from '../money/index.ts';
import type { InvokeEngine } from '../market/index.ts';
import type { SendMode } from './types.ts';

export interface BuyOutcome {
  view: TransactionView;
  /** A failed freeze (4020, ...): the transaction stays in pending_freeze and no money moved. */
  failure?: AppError;
}

/** The transaction a failed invoke left behind (5020 / 5040 name it), or null for any other error. */
function transactionOfFailure(error: unknown): string | null {
  if (!(error instanceof AppError) || (error.errorName !== 'callback_failed' && error.errorName !== 'callback_timeout')) return null;
  const id = (error.data as { transaction_id?: unknown } | undefined)?.transaction_id;
  return typeof id === 'string' ? id : null;
}

/**
 * How an A2A send buys: a purchase (create and freeze), or, when an agent names an instant
 * capability (per_query with a callback), an invoke. Both run under the same idempotency key and
 * operation with the same fingerprint, so one message (or one pick) buys once whichever path it
 * takes, even if the capability changed in between.
 */
export function createBuying({ db, log }: EngineDependencies, transactions: TransactionEngine, invoke: InvokeEngine) {
  async function isInstant(principal: Principal, capabilityId: string): Promise<boolean> {
    if (principal.caller_type !== 'agent' || !isUuid(capabilityId)) return false;
    const row = await db('capabilities').where({ id: capabilityId.toLowerCase() }).first('pricing_model', 'callback_url');
    return row?.pricing_model === 'per_query' && Boolean(row.callback_url);
  }

  /**
   * A blocking send waits for the callback's outcome; otherwise the answer is the task as soon as
   * its hold committed, and the callback's outcome arrives as the transaction's next state.
   */
  async function invokeNow(principal: Principal, command: CreateTransactionCommand, key: string, mode: SendMode): Promise<BuyOutcome> {
    const request = { key, operation: 'purchase create', fingerprint: fingerprintOf(command) };
    const { capability_id: capabilityId, booked_hours: _hours, ...rest } = command;
    let held: (id: string) => void = () => {};
    const heldId = new Promise<string>((resolve) => {
      held = resolve;
    });
    // The callback receives the buyer's words as input.text when the message carried no input.
    const invokeCommand = { ...rest, input: rest.input ?? (rest.note ? { text: rest.note } : undefined) };
    const running = invoke.invoke(principal, capabilityId, invokeCommand, request, { held }).then(
      ({ data }) => data.transaction_id,
      (error: unknown) => {
        const id = transactionOfFailure(error);
        if (id === null) throw error;
        return id;
      },
    );
    let id: string;
    if (mode.wait) {
      id = await running;
    } else {
      id = await Promise.race([heldId, running]);
      running.catch((error: unknown) => log.error('a2a: an invoke answered early failed later', { error }));
    }
    return { view: await transactions.get(principal, id) };
  }

  /** A twin of this purchase still running (4091) is waited for, when asked, so both answer the same task. */
  async function purchase(principal: Principal, command: CreateTransactionCommand, key: string, waitForTwin: boolean): Promise<BuyOutcome> {
    const waitUntil = performance.now() + limits.a2aPickWaitMs;
    const twinRunning = (error: unknown) =>
      waitForTwin && error instanceof AppError && error.errorName === 'idempotency_in_progress' && performance.now() < waitUntil;
    for (;;) {
      try {
        // The freeze step reports its errors as a failure beside the created transaction.
        const outcome = await transactions.purchase(principal, command, key);
        if (!twinRunning(outcome.failure)) return outcome;
      } catch (error) {
        if (!twinRunning(error)) throw error;
      }
      await sleep(limits.a2aPickWaitPollMs);
    }
  }

  async function buy(principal: Principal, command: CreateTransactionCommand, key: string, mode: SendMode & { waitForTwin?: boolean }): Promise<BuyOutcome> {
    if (await isInstant(principal, command.capability_id)) return invokeNow(principal, command, key, mode);
    return purchase(principal, command, key, mode.waitForTwin ?? false);
  }

  return { buy };
}

export type Buying = ReturnType<typeof createBuying>;
