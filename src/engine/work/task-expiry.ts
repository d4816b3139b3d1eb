import { type UnitOfWork, withSingleStatement, withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { lockTask, type TaskRow } from '../../store/tasks.ts';
import type { EngineDependencies } from '../common/index.ts';
import type { createTaskEnd } from './task-end.ts';
import { statusAt } from './task-rows.ts';
import { DecideInTransaction } from './task-statement.ts';

type EndTask = ReturnType<typeof createTaskEnd>['endTask'];

/** What a sweep says of each task it picked: expired by it, gone (ended by someone else first), or the error that failed it. */
export interface ExpiryOutcome {
  id: string;
  expired: boolean;
  error?: unknown;
}

/**
 * The sweeper's expiry of open tasks past their deadline (docs/decisions/money-and-escrow.md
 * "Task money and group commit"): the due tasks read without a lock and their expiries submitted
 * at once, each one change of the batcher (`endTask` with the action `expire`), so that they share
 * statements. The compare-and-set decides which instance or move ends a task: another sweeper, the
 * publisher's close or an acceptance that got there first leaves this one a task that is gone.
 * `endInTransaction` is the transaction path, for a task that kept changing under the attempts.
 */
export function createTaskExpiry(
  { db, now }: Pick<EngineDependencies, 'db' | 'now'>,
  endTask: EndTask,
  endInTransaction: (unit: UnitOfWork, row: TaskRow) => Promise<unknown>,
) {
  /** True when this call expired the task, false when it was gone or no longer due. */
  async function expireOne(id: string): Promise<boolean> {
    try {
      await withSingleStatement(db, (unit) => endTask(unit, null, id, 'expire', now, () => id));
      return true;
    } catch (error) {
      if (error instanceof AppError && error.errorName === 'invalid_state_transition') return false;
      if (!(error instanceof DecideInTransaction)) throw error;
      return withTransaction(db, async (unit) => {
        const row = await lockTask(unit.trx, id);
        if (!row || statusAt(row, now()) !== 'expired') return false;
        await endInTransaction(unit, row);
        return true;
      });
    }
  }

  /** Expires up to `limit` open tasks past their deadline, not those in `skipIds`, submitted at once. */
  async function expireDue(limit: number, skipIds: string[]): Promise<ExpiryOutcome[]> {
    const query = db<TaskRow>('tasks').where('status', 'open').where('expires_at', '<=', now()).orderBy('expires_at').limit(limit);
    if (skipIds.length > 0) query.whereNotIn('id', skipIds);
    const due = (await query.select('id')) as { id: string }[];
    return Promise.all(
      due.map(({ id }) =>
        expireOne(id).then(
          (expired) => ({ id, expired }),
          (error: unknown) => ({ id, expired: false, error }),
        ),
      ),
    );
  }

  return { expireDue };
}
