import type { Database } from '../../db/database.ts';
import type { Logger } from '../../logger.ts';
import { periodic } from '../../periodic.ts';
import { pruneBudgetDays } from '../../store/agent-budgets.ts';
import { pruneUsage } from '../../store/capability-usage.ts';
import { dayOf } from './budget-bounds.ts';
import type { TransactionEngine } from './transactions.ts';
import type { SweepOutcome } from './transaction-sweeps.ts';
import { limits } from '../../limits.ts';

/** A sweep of due rows: up to `limit` of them moved at once, not those in `skipIds`. */
type Sweep = (limit: number, skipIds: string[]) => Promise<SweepOutcome[]>;

/**
 * Open tasks past their deadline (engine/work/tasks.ts), expired with their bounty released, up to
 * `limit` at once as changes of the batcher that share statements: each answers expired, gone
 * (another instance or a move of the task's own got there first), or the error that failed it.
 */
export interface TaskExpiry {
  expireDue(limit: number, skipIds: string[]): Promise<{ id: string; expired: boolean; error?: unknown }[]>;
}

/** The task expiries as a sweep: a task expired by this sweep is a row it moved. */
const expiriesOf =
  (expiry: TaskExpiry): Sweep =>
  async (limit, skipIds) =>
    (await expiry.expireDue(limit, skipIds)).map(({ id, expired, error }) => ({ id, moved: expired, error }));

/**
 * Settles delivered transactions whose auto_confirm_at has passed, releases invokes whose deadline
 * passed while they were still frozen (their server died during the callback), and expires open
 * tasks past their deadline (their bounty released). The due rows are read without a lock and
 * moved several at once, as changes of the batcher that share statements; the compare-and-set of
 * each move decides, so several instances can sweep at once without moving anything twice (the
 * second finds the row gone). Old counts of capability usage windows and agent budgets' old days
 * are pruned here too. Expired idempotency keys are the retention job's (engine/common/retention.ts).
 */
export function createSweeper(
  transactions: TransactionEngine,
  log: Logger,
  batchSizeMax: number = limits.sweepBatchSizeMax,
  usage?: { db: Database; now: () => Date },
  tasks?: TaskExpiry,
) {
  async function runOnce(): Promise<number> {
    const settled = await sweepAll(transactions.autoConfirmDue, 'auto-confirm');
    if (settled > 0) log.info('auto-confirmed delivered transactions', { settled });
    const released = await sweepAll(transactions.failOverdueInvokes, 'release of an overdue invoke');
    if (released > 0) log.warn('released invokes that outlived their deadline', { released });
    const expired = tasks ? await sweepAll(expiriesOf(tasks), 'expiry of an open task') : 0;
    if (expired > 0) log.info('expired open tasks past their deadline, releasing their bounties', { expired });
    if (usage) await pruneUsage(usage.db, new Date(usage.now().getTime() - limits.capabilityUsageRetentionMs), limits.sweepBatchSizeMax);
    // Agent budgets' days past their retention (budgets.ts): only today's usage is read.
    if (usage) await pruneBudgetDays(usage.db, dayOf(new Date(usage.now().getTime() - limits.agentBudgetDaysRetentionMs)), limits.sweepBatchSizeMax);
    return settled + released + expired;
  }

  /**
   * Due rows, `sweepMovesAtOnceMax` at a time, until none is due or `batchSizeMax` were moved or
   * failed. A row that fails is logged and passed over for the rest of this run, so one bad row
   * cannot stop every later one from moving; a round in which every row was gone (another
   * instance moved them) ends the run, which the next one goes on from.
   */
  async function sweepAll(sweep: Sweep, what: string): Promise<number> {
    let moved = 0;
    const failedIds: string[] = [];
    while (moved + failedIds.length < batchSizeMax) {
      const outcomes = await sweep(Math.min(limits.sweepMovesAtOnceMax, batchSizeMax - moved - failedIds.length), failedIds);
      for (const outcome of outcomes) {
        if (outcome.error !== undefined) {
          log.error(`${what} failed; passing over this row in this run`, { id: outcome.id, error: outcome.error });
          failedIds.push(outcome.id);
        } else if (outcome.moved) moved++;
      }
      if (outcomes.every((outcome) => outcome.error === undefined && !outcome.moved)) break;
    }
    return moved;
  }

  const schedule = periodic('sweep', runOnce, log);
  return { runOnce, start: schedule.start, stop: schedule.stop, idle: schedule.idle };
}
