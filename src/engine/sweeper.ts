import type { Logger } from '../logger.ts';
import { periodic } from '../periodic.ts';
import type { TransactionEngine } from './transactions.ts';
import { limits } from '../limits.ts';

/**
 * Settles delivered transactions whose auto_confirm_at has passed (expired idempotency keys are
 * the retention job's, engine/retention.ts). Each settlement claims its row with SKIP LOCKED, so several instances can sweep at once
 * without settling anything twice or waiting on each other.
 */
export function createSweeper(transactions: TransactionEngine, log: Logger, batchSizeMax: number = limits.sweepBatchSizeMax) {
  async function runOnce(): Promise<number> {
    let settled = 0;
    // A row that fails is logged and skipped for the rest of this run, so one bad row cannot
    // stop every later one from settling.
    const failedIds: string[] = [];
    while (settled + failedIds.length < batchSizeMax) {
      const outcome = await settleNext(failedIds);
      if (outcome === 'none') break;
      if (outcome === 'settled') settled++;
    }
    if (settled > 0) log.info('auto-confirmed delivered transactions', { settled });
    return settled;
  }

  async function settleNext(failedIds: string[]): Promise<'settled' | 'failed' | 'none'> {
    const outcome = await transactions.autoConfirmNextDue(failedIds);
    if (!outcome) return 'none';
    if (outcome.error === undefined) return 'settled';
    log.error('auto-confirm failed; passing over this transaction in this run', { transaction_id: outcome.id, error: outcome.error });
    failedIds.push(outcome.id);
    return 'failed';
  }

  const schedule = periodic('sweep', runOnce, log);
  return { runOnce, start: schedule.start, stop: schedule.stop, idle: schedule.idle };
}
