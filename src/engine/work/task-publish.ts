import { nextTaskState } from '../../domain/tasks.ts';
import type { UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { TaskView } from '../../schemas/tasks.ts';
import type { StateChange } from '../../store/change.ts';
import type { TaskRow } from '../../store/tasks.ts';
import { authorize, manageTask } from '../access/index.ts';
import type { Principal } from '../common/index.ts';
import { bountyHoldLegs, type FreezeCharge, planBountyCharge, type Transitions } from '../money/index.ts';
import { deadlineOf, type newTaskRow } from './task-rows.ts';
import { type TaskEvents, taskMovedEvents } from './task-events.ts';
import { DecideInTransaction, readVersioned, submitTaskChange } from './task-statement.ts';

export { DecideInTransaction } from './task-statement.ts';

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

/** A publish that found too little money: the task stays a draft, and the answer says by how much. */
export interface Shortfall {
  currency: string;
  available: string;
  required: string;
}

export interface TaskOutcome {
  task: TaskView;
  shortfall?: Shortfall;
}

/** The 4020 a publish with too little money answers, with the draft it left and the numbers. */
export function shortfallError(outcome: TaskOutcome): AppError {
  return new AppError('insufficient_balance', 'the bounty is more than the available balance: the task is kept as a draft', {
    ...outcome.shortfall,
    task_id: outcome.task.id,
    status: outcome.task.status,
    task: outcome.task,
  });
}

/** What publishing a draft restates: its delivery period, and its bounty and deadline if given. */
export interface DraftRestated {
  delivery_hours: number;
  bounty_amount?: bigint | null;
  expires_at?: string;
}

/** The draft as restated and published at `at`, as the UPDATE writes it and a SELECT would read it after. */
function restatedOpen(row: TaskRow, body: DraftRestated, at: Date) {
  const bounty = body.bounty_amount === undefined ? row.bounty_amount : body.bounty_amount === null ? null : String(body.bounty_amount);
  const wanted = bounty === null ? 0n : BigInt(bounty);
  // A draft keeps the deadline it was given; once that has passed, the transaction path answers.
  const expiresAt = body.expires_at === undefined ? new Date(row.expires_at ?? deadlineOf(undefined, at)) : deadlineOf(body.expires_at, at);
  if (expiresAt.getTime() <= at.getTime()) throw new DecideInTransaction('the deadline of this draft has passed');
  // The bounty is written as read when not restated: the compare-and-set makes that the row's own.
  const set = {
    delivery_hours: body.delivery_hours,
    bounty_amount: bounty,
    status: 'open' as const,
    bounty_held: String(wanted),
    published_at: at,
    expires_at: expiresAt,
    updated_at: at,
  };
  return { set, wanted, published: { ...row, ...set } as TaskRow };
}

export function createTaskPublish(transitions: Pick<Transitions, 'submit'>, events: TaskEvents) {
  const written = (unit: UnitOfWork, change: StateChange, charge: FreezeCharge | undefined) => submitTaskChange(transitions, events, unit, change, charge);

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
    // A new row has no compare-and-set to lose: anything but applied or over_budget is a failure of its own.
    if (!(await written(unit, change, charge))) throw new Error("a new task's insert was not written (stale)");
    return response;
  }

  /**
   * Publishes a draft in one statement of `unit` (the pool), as ONE change the batcher groups with
   * every other: the compare-and-set of the row on its status and version with the restated
   * fields, the hold, the budget's take, the publisher's event (a draft has no applicants) and the
   * claim's completion. A draft that changed since it was read is read and decided again; after
   * compareAndSetAttemptsMax, the transaction path decides (DecideInTransaction). Not enough money
   * throws InsufficientBalance, for which the caller commits the restated fields on the
   * transaction path, as for a new task.
   */
  async function publishDraft<T>(unit: UnitOfWork, principal: Principal, id: string, body: DraftRestated, now: () => Date, answer: (task: TaskRow) => T) {
    for (let attempt = 0; attempt < limits.compareAndSetAttemptsMax; attempt++) {
      const read = await readVersioned(unit.trx, id);
      const { version, ...row } = authorize(manageTask, principal, read, 'task');
      nextTaskState(row.status, 'publish');
      const at = now();
      const { set, wanted, published } = restatedOpen(row, body, at);
      // What the budget allows and per_purchase_max answer 4021 here; the day's bound is the statement's.
      const charge = await planBountyCharge(unit.trx, principal, published, wanted, at);
      const response = answer(published);
      const change: StateChange = {
        transactionId: row.id,
        buyerUserId: row.owner_user_id,
        sellerUserId: row.owner_user_id,
        write: { kind: 'update_task', fromStatus: 'draft', fromVersion: version, set },
        legs: wanted === 0n ? [] : bountyHoldLegs({ ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held: 0n, wanted }),
        events: [],
        taskEvents: taskMovedEvents(published, 'publish', 'draft', []),
        at,
        ...(unit.claim ? { claim: { ...unit.claim, responseBody: response } } : {}),
        ...(charge ? { budget: charge.take } : {}),
      };
      if (await written(unit, change, charge)) return response;
    }
    throw new DecideInTransaction('the draft changed under every attempt');
  }

  return { publishNew, publishDraft };
}
