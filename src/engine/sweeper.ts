import type { Logger } from '../logger.ts';
import type { Idempotency } from './idempotency.ts';
import type { TransactionEngine } from './transactions.ts';

/**
 * Settles delivered transactions whose auto_confirm_at has passed, and drops expired idempotency
 * keys. Each settlement claims its row with SKIP LOCKED, so several instances can sweep at once
 * without settling anything twice or waiting on each other.
 */
export function createSweeper(transactions: TransactionEngine, idempotency: Idempotency, log: Logger, batchSizeMax = 500) {
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<number> | null = null;

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

  function start(intervalMs: number) {
    stop();
    timer = setInterval(() => {
      if (running) return; // never overlap two sweeps in one instance
      running = runOnce()
        .catch((error: unknown) => {
          log.error('sweep failed', { error });
          return 0;
        })
        .finally(() => {
          running = null;
        });
    }, intervalMs);
    timer.unref();
  }

  function stop() {
    if (timer) clearInterval(timer);
    timer = null;
  }

  return { runOnce, start, stop, idle: () => running ?? Promise.resolve(0) };
}
