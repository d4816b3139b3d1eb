import type { Database } from '../../db/database.ts';
import type { Logger } from '../../logger.ts';
import { periodic } from '../../periodic.ts';
import { pruneBudgetDays } from '../../store/agent-budgets.ts';
import { pruneUsage } from '../../store/capability-usage.ts';
import { dayOf } from './budget-bounds.ts';
import type { TransactionEngine } from './transactions.ts';
import { limits } from '../../limits.ts';

type Sweep = (skipIds: string[]) => Promise<{ id: string; error?: unknown } | null>;

/**
 * Settles delivered transactions whose auto_confirm_at has passed, and releases invokes whose
 * deadline passed while they were still frozen (their server died during the callback). Expired
 * idempotency keys are the retention job's (engine/common/retention.ts). Each move claims its row with
 * SKIP LOCKED, so several instances can sweep at once without moving anything twice or waiting
 * on each other. Old counts of capability usage windows and agent budgets' old days are pruned here too, and open tasks past
 * their deadline expire (their bounty released), several at once in shared statements.
 */
/**
 * Open tasks past their deadline (engine/work/tasks.ts), expired with their bounty released, up to
 * `limit` at once as changes of the batcher that share statements: each answers expired, gone
 * (another instance or a move of the task's own got there first), or the error that failed it.
 */
export interface TaskExpiry {
  expireDue(limit: number, skipIds: string[]): Promise<{ id: string; expired: boolean; error?: unknown }[]>;
}

export function createSweeper(
  transactions: TransactionEngine,
  log: Logger,
  batchSizeMax: number = limits.sweepBatchSizeMax,
  usage?: { db: Database; now: () => Date },
  tasks?: TaskExpiry,
) {
  async function runOnce(): Promise<number> {
    const settled = await sweepAll(transactions.autoConfirmNextDue, 'auto-confirm');
    if (settled > 0) log.info('auto-confirmed delivered transactions', { settled });
    const released = await sweepAll(transactions.failNextOverdueInvoke, 'release of an overdue invoke');
    if (released > 0) log.warn('released invokes that outlived their deadline', { released });
    const expired = tasks ? await expireAll(tasks) : 0;
    if (expired > 0) log.info('expired open tasks past their deadline, releasing their bounties', { expired });
    if (usage) await pruneUsage(usage.db, new Date(usage.now().getTime() - limits.capabilityUsageRetentionMs), limits.sweepBatchSizeMax);
    // Agent budgets' days past their retention (budgets.ts): only today's usage is read.
    if (usage) await pruneBudgetDays(usage.db, dayOf(new Date(usage.now().getTime() - limits.agentBudgetDaysRetentionMs)), limits.sweepBatchSizeMax);
    return settled + released + expired;
  }

  async function sweepAll(sweep: Sweep, what: string): Promise<number> {
    let moved = 0;
    // A row that fails is logged and skipped for the rest of this run, so one bad row cannot
    // stop every later one from moving.
    const failedIds: string[] = [];
    while (moved + failedIds.length < batchSizeMax) {
      const outcome = await sweep(failedIds);
      if (!outcome) break;
      if (outcome.error === undefined) {
        moved++;
        continue;
      }
      log.error(`${what} failed; passing over this row in this run`, { id: outcome.id, error: outcome.error });
      failedIds.push(outcome.id);
    }
    return moved;
  }

  /**
   * Open tasks past their deadline, `taskExpiriesAtOnceMax` at a time, until none is due or
   * `batchSizeMax` were expired or failed. A task that fails is logged and passed over for the rest
   * of this run, as in sweepAll; a round in which every task was gone (another instance expired
   * them) ends the run, which the next one goes on from.
   */
  async function expireAll(expiry: TaskExpiry): Promise<number> {
    let expired = 0;
    const failedIds: string[] = [];
    while (expired + failedIds.length < batchSizeMax) {
      const outcomes = await expiry.expireDue(Math.min(limits.taskExpiriesAtOnceMax, batchSizeMax - expired - failedIds.length), failedIds);
      for (const outcome of outcomes) {
        if (outcome.error !== undefined) {
          log.error('expiry of an open task failed; passing over this row in this run', { id: outcome.id, error: outcome.error });
          failedIds.push(outcome.id);
        } else if (outcome.expired) expired++;
      }
      if (outcomes.every((outcome) => outcome.error === undefined && !outcome.expired)) break;
    }
    return expired;
  }

  const schedule = periodic('sweep', runOnce, log);
  return { runOnce, start: schedule.start, stop: schedule.stop, idle: schedule.idle };
}
