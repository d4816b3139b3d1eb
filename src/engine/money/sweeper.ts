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
 * their deadline expire (their bounty released) the same way.
 */
/** Open tasks past their deadline (engine/work/tasks.ts), expired one by one with their bounty released. */
export interface TaskExpiry {
  expireNextDue: Sweep;
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
    const expired = tasks ? await sweepAll(tasks.expireNextDue, 'expiry of an open task') : 0;
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

  const schedule = periodic('sweep', runOnce, log);
  return { runOnce, start: schedule.start, stop: schedule.stop, idle: schedule.idle };
}
