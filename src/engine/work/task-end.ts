import type { Knex } from 'knex';
import { nextTaskState } from '../../domain/tasks.ts';
import type { UnitOfWork } from '../../db/transaction.ts';
import { AppError, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { StateChange } from '../../store/change.ts';
import type { TaskRow } from '../../store/tasks.ts';
import { authorize, manageTask } from '../access/index.ts';
import type { Principal } from '../common/index.ts';
import { bountyHoldLegs, giveBackAgentBudget, type Transitions } from '../money/index.ts';
import { applicationMovedEvents, type TaskEvents, taskMovedEvents } from './task-events.ts';
import type { ApplicationRow } from './application-rows.ts';
import { statusAt } from './task-rows.ts';
import { DecideInTransaction, readVersioned, submitTaskChange } from './task-statement.ts';

/**
 * A task closed by its publisher, cancelled by the operator or expired by the sweeper as ONE change
 * the batcher groups with every other (docs/decisions/money-and-escrow.md "Task money and group commit"): the
 * compare-and-set of the task row on its status and version, to closed, cancelled or expired with
 * nothing held, the hold's release (frozen -> available in the publisher's account, referring to the
 * task), the move's event for the publisher and every pending applicant, and, under an
 * Idempotency-Key, the claim's completion. What the hold was charged to an agent budget goes back
 * once the statement has committed, as for a purchase's release.
 *
 * The applicants are read after the version: an application writes the task row as it locks it
 * (task-applications.ts), so one that committed after the version was read fails the
 * compare-and-set, and the close is read and decided again with its applicant among the
 * recipients. Without that, a statement that waited for an application's lock would read the
 * applications in the snapshot it started with and leave the new applicant unaware.
 */
export function createTaskEnd(transitions: Pick<Transitions, 'submit'>, events: TaskEvents, db: Knex) {
  /**
   * Ends the task `id` in one statement of `unit` (the pool): `viewer` is its publisher closing it,
   * or null for the operator's cancel and the sweeper's expiry (of a task past its deadline only). A task that changed under every attempt goes to the
   * transaction path (DecideInTransaction), which decides it as before.
   */
  async function endTask<T>(
    unit: UnitOfWork,
    viewer: Principal | null,
    id: string,
    action: 'close' | 'cancel' | 'expire',
    now: () => Date,
    answer: (task: TaskRow) => T,
  ): Promise<T> {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const read = await readVersioned(unit.trx, id);
      if (!viewer && !read) throw notFound('task');
      const { version, ...row } = viewer ? authorize(manageTask, viewer, read, 'task') : read!;
      const transition = nextTaskState(row.status, action);
      const at = now();
      // The sweeper expires only a task past its deadline as the row has it now.
      if (action === 'expire' && statusAt(row, at) !== 'expired')
        throw new AppError('invalid_state_transition', 'the task is not past its deadline', { status: row.status, action });
      const pending = (await unit.trx('task_applications').where({ task_id: id, status: 'pending' })) as ApplicationRow[];
      const applicants = [...new Set(pending.map((application) => application.applicant_id))];
      const set = { status: transition.to, bounty_held: '0', ended_at: at, updated_at: at };
      const ended = { ...row, ...set } as TaskRow;
      // Its pending applications end with it in the same statement (store/change-tasks.ts), each told.
      const rejected = pending.map((application) => ({
        application: { ...application, status: 'rejected' as const, decided_at: at },
        action,
        previousStatus: 'pending',
      }));
      const response = answer(ended);
      const held = BigInt(row.bounty_held);
      const change: StateChange = {
        transactionId: row.id,
        buyerUserId: row.owner_user_id,
        sellerUserId: row.owner_user_id,
        write: { kind: 'update_task', fromStatus: row.status, fromVersion: version, set },
        // The same movement a release in a transaction of its own writes (money/task-money.ts).
        legs: held === 0n ? [] : bountyHoldLegs({ ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held, wanted: 0n }),
        events: [],
        taskEvents: [...taskMovedEvents(ended, action, row.status, applicants), ...applicationMovedEvents(ended, rejected)],
        at,
        ...(unit.claim ? { claim: { ...unit.claim, responseBody: response } } : {}),
      };
      if (await submitTaskChange(transitions, events, unit, change, undefined)) {
        // What the hold was charged goes back once the release committed (budgets.ts), as the
        // transaction path gives it back in its transaction (a draft's close finds nothing).
        unit.afterCommit(() => giveBackAgentBudget(db, row.id));
        return response;
      }
    }
    throw new DecideInTransaction('the task changed under every attempt');
  }

  return { endTask };
}
