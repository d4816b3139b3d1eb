import type { UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import type { StateChange } from '../../store/change.ts';
import { shortfallOf } from '../../store/ledger.ts';
import type { TaskRow } from '../../store/tasks.ts';
import type { Principal } from '../common/index.ts';
import { bountyHoldLegs, planBountyCharge, type Transitions } from '../money/index.ts';
import { deadlineOf, type newTaskRow, taskView } from './task-rows.ts';
import { type TaskEvents, taskMovedEvents } from './task-events.ts';

/**
 * A new task published with its bounty held as ONE change the batcher groups with every other
 * (docs/decisions/money-and-escrow.md "Task money and group commit"): the task row inserted open,
 * the hold (available -> frozen in the publisher's account, referring to the task), the agent
 * budget's take for a person's key, the `task.published` event of its publisher (a new task has
 * no applicants) and, under an Idempotency-Key, the claim's completion. Not enough money fails the
 * statement: the batcher finds this change alone and it throws InsufficientBalance, for which the
 * caller keeps a draft on the transaction path (a draft and its event must commit, which a failed
 * statement cannot).
 */
type NewTaskRow = ReturnType<typeof newTaskRow>;

const parsed = (value: string | null) => (value === null ? null : (JSON.parse(value) as unknown));

/** The task as inserted open, as a SELECT would read it: JSON columns parsed, times as dates. */
function openRow(row: NewTaskRow, bounty: bigint, at: Date): TaskRow {
  // A draft keeps the deadline it was given; once that has passed, it is not published expired.
  const expiresAt = new Date(row.expires_at ?? deadlineOf(undefined, at));
  if (expiresAt.getTime() <= at.getTime()) {
    throw new AppError('validation_error', 'the deadline of this draft has passed: send a new expires_at', {
      errors: [{ path: 'body.expires_at', message: 'the stored deadline has passed: required' }],
    });
  }
  return {
    ...row,
    tags: parsed(row.tags),
    image_urls: parsed(row.image_urls),
    contact_info: parsed(row.contact_info),
    term_vector: parsed(row.term_vector),
    status: 'open',
    bounty_held: String(bounty),
    published_at: at,
    expires_at: expiresAt,
    ended_at: null,
  } as TaskRow;
}

export function createTaskPublish(transitions: Pick<Transitions, 'submit'>, events: TaskEvents) {
  /** Publishes `row` (a new task, not yet written) in one statement of `unit` (the pool: single-statement work). */
  async function publishNew<T>(unit: UnitOfWork, principal: Principal, row: NewTaskRow, at: Date, answer: (task: TaskRow) => T): Promise<T> {
    const bounty = row.bounty_amount === null ? 0n : BigInt(row.bounty_amount);
    const task = openRow(row, bounty, at);
    // What the budget allows and per_purchase_max answer 4021 here; the day's bound is the statement's.
    const charge = await planBountyCharge(unit.trx, principal, task, bounty, at);
    const { ended_at: _ended, ...values } = task;
    const response = answer(task);
    const change: StateChange = {
      transactionId: task.id,
      buyerUserId: task.owner_user_id,
      sellerUserId: task.owner_user_id,
      write: { kind: 'insert_task', values },
      // The same movement a bounty hold in a transaction of its own writes (money/task-money.ts).
      legs: bounty === 0n ? [] : bountyHoldLegs({ ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held: 0n, wanted: bounty }),
      events: [],
      taskEvents: taskMovedEvents(task, 'publish', null, []),
      at,
      ...(unit.claim ? { claim: { ...unit.claim, responseBody: response } } : {}),
      ...(charge ? { budget: charge.take } : {}),
    };
    let outcome;
    try {
      outcome = await transitions.submit(change);
    } catch (error) {
      throw shortfallOf(error, change.legs) ?? error;
    }
    if (outcome.kind === 'claim_lost') throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
    // The day's bound refused the budget's take: nothing was written, not even a draft (as before).
    if (outcome.kind === 'over_budget') throw await charge!.refuse();
    if (outcome.kind !== 'applied') throw new Error(`a new task's insert was not written (${outcome.kind})`);
    if (unit.claim) unit.claim.completed = true;
    events.written(unit, outcome.taskEvents ?? []);
    return response;
  }

  return { publishNew };
}
