import type { Logger } from '../logger.ts';
import { periodic } from '../periodic.ts';
import type { Idempotency } from './idempotency.ts';
import type { TransactionEngine } from './transactions.ts';

/**
 * Settles delivered transactions whose auto_confirm_at has passed, and drops expired idempotency
 * keys. Each settlement claims its row with SKIP LOCKED, so several instances can sweep at once
 * without settling anything twice or waiting on each other.
 */
export function createSweeper(transactions: TransactionEngine, idempotency: Idempotency, log: Logger, batchSizeMax = 500) {
  async function runOnce(): Promise<number> {
    let settled = 0;
    while (settled < batchSizeMax) {
      const done = await transactions.autoConfirmNextDue();
      if (!done) break;
      settled++;
    }
    await idempotency.deleteExpired();
    if (settled > 0) log.info('auto-confirmed delivered transactions', { settled });
    return settled;
  }

  const schedule = periodic('sweep', runOnce, log);
  return { runOnce, start: schedule.start, stop: schedule.stop, idle: schedule.idle };
}
