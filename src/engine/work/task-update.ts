import { formatAmount } from '../../domain/money.ts';
import { nextTaskState } from '../../domain/tasks.ts';
import { type UnitOfWork, withSingleStatement, withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { UpdateTaskInput } from '../../schemas/tasks.ts';
import type { StateChange } from '../../store/change.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { lockTask, type TaskRow, taskColumns } from '../../store/tasks.ts';
import { authorize, manageTask } from '../access/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { bountyHoldLegs, changeHold, chargeBounty, giveBackAgentBudget, planBountyCharge, type Transitions } from '../money/index.ts';
import { changedTaskColumns, statusAt, taskView } from './task-rows.ts';
import { pendingSelectionsAbove } from './task-pushes.ts';
import { pendingApplicants, type TaskEvents, taskMovedEvents } from './task-events.ts';
import { DecideInTransaction, readVersioned, submitTaskChange } from './task-statement.ts';

/**
 * A task's partial update (PUT /tasks/{id}) while draft or open, as ONE change the batcher groups
 * with every other (docs/decisions/money-and-escrow.md "Task money and group commit"): the
 * compare-and-set of the task row on its status and version with the changed fields, and on an
 * open task whose bounty changes, the hold moved by the difference (a freeze of a rise, a release
 * of a fall) with the budget's take of a rise; the `task.updated` event of the publisher and every
 * pending applicant. A selection writes the task row as it locks it (task-pushes.ts), as an
 * application does, so an edit decided before either committed is decided again.
 */

/** The 4092 of a bounty lowered below the price of a selection still waiting for its answer. */
function selectionsWaiting(wanted: bigint, waiting: Awaited<ReturnType<typeof pendingSelectionsAbove>>): AppError {
  return new AppError(
    'conflict',
    'the bounty cannot drop below the price of a selection waiting for its answer: withdraw the selection first (DELETE /api/v1/tasks/{task_id}/pushes/{push_id})',
    { bounty_amount: formatAmount(wanted), pending_selections: waiting },
  );
}

/** The changed columns as the row holds them: JSON columns parsed (the statement writes them from JSON). */
function rowValuesOf(columns: Record<string, unknown>): Record<string, unknown> {
  const values = { ...columns };
  for (const key of ['tags', 'image_urls', 'contact_info', 'term_vector'])
    if (typeof values[key] === 'string') values[key] = JSON.parse(values[key]) as unknown;
  return values;
}

export function createTaskUpdate({ db, now }: Pick<EngineDependencies, 'db' | 'now'>, transitions: Pick<Transitions, 'submit'>, events: TaskEvents) {
  /**
   * The update in one statement of `unit` (the pool). A task that changed since it was read is read
   * and decided again; after compareAndSetAttemptsMax, DecideInTransaction. Too little money for a
   * rise throws InsufficientBalance (the statement failed alone): the transaction path answers.
   */
  async function updateInStatement(unit: UnitOfWork, principal: Principal, id: string, patch: UpdateTaskInput): Promise<TaskRow> {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const { version, ...row } = authorize(manageTask, principal, await readVersioned(unit.trx, id), 'task');
      const at = now();
      nextTaskState(statusAt(row, at), 'update');
      const columns = changedTaskColumns(principal, row, patch, at);
      const held = BigInt(row.bounty_held);
      let wanted = held;
      if (row.status === 'open' && 'bounty_amount' in columns) {
        wanted = columns.bounty_amount === null ? 0n : BigInt(columns.bounty_amount as string);
        const waiting = wanted < held ? await pendingSelectionsAbove(unit.trx, id, wanted) : [];
        if (waiting.length > 0) throw selectionsWaiting(wanted, waiting);
        columns.bounty_held = String(wanted);
      }
      const set = rowValuesOf({ ...columns, updated_at: at });
      const updated = { ...row, ...set };
      // What the budget allows and per_purchase_max answer 4021 here; the day's bound is the statement's.
      const charge = await planBountyCharge(unit.trx, principal, updated, wanted, at, held);
      const change: StateChange = {
        transactionId: row.id,
        buyerUserId: row.owner_user_id,
        sellerUserId: row.owner_user_id,
        write: { kind: 'update_task', fromStatus: row.status, fromVersion: version, set },
        legs: wanted === held ? [] : bountyHoldLegs({ ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held, wanted }),
        events: [],
        taskEvents: taskMovedEvents(updated, 'update', row.status, await pendingApplicants(unit.trx, id)),
        at,
        ...(charge ? { budget: charge.take } : {}),
      };
      if (await submitTaskChange(transitions, events, unit, change, charge)) {
        // A fall gives back up to what the task was charged once it committed, in a transaction of
        // its own (its reads and writes of the charges must not interleave with another's).
        if (wanted < held) unit.afterCommit(() => withTransaction(db, ({ trx }) => giveBackAgentBudget(trx, id, held - wanted)));
        return updated;
      }
    }
    throw new DecideInTransaction('the task changed under every attempt');
  }

  /** The update as it ran before group commit: the row locked, the hold moved, the row written, the event. */
  function updateInTransaction(principal: Principal, id: string, patch: UpdateTaskInput): Promise<TaskRow> {
    return withTransaction(db, async (unit) => {
      const { trx } = unit;
      const row = authorize(manageTask, principal, await lockTask(trx, id), 'task');
      const at = now();
      nextTaskState(statusAt(row, at), 'update');
      const columns = changedTaskColumns(principal, row, patch, at);
      if (row.status === 'open' && 'bounty_amount' in columns) {
        const wanted = columns.bounty_amount === null ? 0n : BigInt(columns.bounty_amount as string);
        const waiting = wanted < BigInt(row.bounty_held) ? await pendingSelectionsAbove(trx, id, wanted) : [];
        if (waiting.length > 0) throw selectionsWaiting(wanted, waiting);
        const category = ('category' in columns ? columns.category : row.category) as string | null;
        await chargeBounty(trx, principal, { ...row, category }, BigInt(row.bounty_held), wanted, at);
        const held = await changeHold(trx, {
          ownerId: row.owner_user_id,
          currency: row.bounty_currency,
          taskId: id,
          held: BigInt(row.bounty_held),
          wanted,
          at,
        });
        if (!held.ok) {
          throw new AppError('insufficient_balance', 'the new bounty is more than the available balance allows: nothing changed', {
            currency: row.bounty_currency,
            available: formatAmount(held.available),
            required: formatAmount(held.required),
          });
        }
        columns.bounty_held = String(wanted);
      }
      const [updated] = (await trx('tasks')
        .where({ id })
        .update({ ...columns, updated_at: at })
        .returning([...taskColumns])) as TaskRow[];
      await events.taskMoved(unit, updated!, 'update', row.status);
      return updated!;
    });
  }

  /**
   * A partial update while draft or open (an open task past its deadline is expired: 4090). On an
   * open task a new bounty moves the hold by the difference with the row; too little money refuses
   * the update (4020), and so does a bounty lowered below the price of a selection still waiting
   * for its answer (4092 naming them: withdraw them first). Either way nothing changes.
   */
  async function update(principal: Principal, id: string, patch: UpdateTaskInput) {
    let row: TaskRow;
    try {
      row = await withSingleStatement(db, (unit) => updateInStatement(unit, principal, id, patch));
    } catch (error) {
      if (!(error instanceof InsufficientBalance || error instanceof DecideInTransaction)) throw error;
      row = await updateInTransaction(principal, id, patch);
    }
    return taskView(row, principal);
  }

  return { update, updateInStatement };
}
