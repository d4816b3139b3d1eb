import type { Knex } from 'knex';
import { FreshClaimNotWritten, type UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import type { StateChange } from '../../store/change.ts';
import { shortfallOf } from '../../store/ledger.ts';
import { type TaskRow, taskColumns } from '../../store/tasks.ts';
import type { FreezeCharge, Transitions } from '../money/index.ts';
import type { TaskEvents } from './task-events.ts';

/**
 * What the task moves that share group commits have in common (task-publish.ts, task-end.ts;
 * docs/decisions/money-and-escrow.md "Task money and group commit"): the task read with its
 * version, and the submission of its one change to the batcher with the answers it can get.
 */

/**
 * A task move the one-statement path leaves to the transaction path, which decides it as before:
 * a draft whose deadline has passed, or a task that changed under every attempt's compare-and-set.
 */
export class DecideInTransaction extends Error {}

/**
 * The task with its version, the `xmin` that every committed UPDATE of the row renews (an
 * application's too: task-applications.ts writes the row as it locks it).
 */
export const readVersioned = (db: Knex, id: string) =>
  db('tasks')
    .where({ id })
    .first([...taskColumns, db.raw('xmin::text AS version')]) as Promise<(TaskRow & { version: string }) | undefined>;

/**
 * Submits a task's change; false when its row changed since it was read (stale), so nothing was
 * written. Its task events are published once the statement has committed.
 */
export async function submitTaskChange(
  transitions: Pick<Transitions, 'submit'>,
  events: Pick<TaskEvents, 'written'>,
  unit: UnitOfWork,
  change: StateChange,
  charge: FreezeCharge | undefined,
): Promise<boolean> {
  let outcome;
  try {
    outcome = await transitions.submit(change);
  } catch (error) {
    throw shortfallOf(error, change.legs) ?? error;
  }
  if (outcome.kind === 'claim_lost') throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  // The day's bound refused the budget's take: nothing was written, not even the restated fields (as before).
  if (outcome.kind === 'over_budget') throw await charge!.refuse();
  if (outcome.kind === 'stale') return false;
  // A task's change never carries a fresh claim (only purchases do); the outcome is named for the types.
  if (outcome.kind === 'key_taken') throw new FreshClaimNotWritten('key_taken');
  if (unit.claim) unit.claim.completed = true;
  events.written(unit, outcome.taskEvents ?? []);
  return true;
}
