import type { Knex } from 'knex';
import { formatAmount } from '../../domain/money.ts';
import { nextTaskState } from '../../domain/tasks.ts';
import type { UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { type CreateTaskInput, type TaskView, type UpdateTaskInput, taskShapeProblems } from '../../schemas/tasks.ts';
import { findTask, lockTask, type TaskRow, taskColumns } from '../../store/tasks.ts';
import { manageTask, seeTask, authorize } from '../access/index.ts';
import { type EngineDependencies, type Principal, newestFirstPage } from '../common/index.ts';
import { type Idempotency, type IdempotencyRequest, type Outcome, type Transitions, changeHold, chargeBounty, giveBackAgentBudget } from '../money/index.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import { deadlineOf, newTaskRow, taskView } from './task-rows.ts';
import type { TaskEvents } from './task-events.ts';
import type { ApplicationRow } from './application-rows.ts';
import { createTaskPublish, DecideInTransaction, type DraftRestated, type TaskOutcome } from './task-publish.ts';
import { createTaskEnd } from './task-end.ts';
import { createTaskUpdate } from './task-update.ts';
import { createTaskExpiry } from './task-expiry.ts';

export { type Shortfall, type TaskOutcome, shortfallError } from './task-publish.ts';

/** Tasks (docs/tasks.md): publish with a held bounty, drafts, update, close, reuse, expiry. */
export function createTaskEngine({ db, now }: EngineDependencies, idempotency: Idempotency, events: TaskEvents, transitions: Pick<Transitions, 'submit'>) {
  const { publishNew, publishDraft: publishOne } = createTaskPublish(transitions, events);
  const { endTask } = createTaskEnd(transitions, events, db);
  const { update } = createTaskUpdate({ db, now }, transitions, events);
  const { expireDue } = createTaskExpiry({ db, now }, endTask, (unit, row) => end(unit, row, 'expire', null));

  /**
   * A new task published in one statement that shares group commits (task-publish.ts); when the
   * money is short, the same request again on the transaction path, which keeps the task a draft
   * with its event and answers 4020 (a failed statement wrote nothing, its claim was let go).
   */
  async function publishNewTask(
    principal: Principal,
    request: IdempotencyRequest | null,
    rowAt: (trx: Knex, at: Date) => ReturnType<typeof newTaskRow> | Promise<ReturnType<typeof newTaskRow>>,
  ): Promise<Outcome<TaskOutcome>> {
    try {
      return await idempotency.run(
        principal,
        request,
        201,
        async (unit) => {
          const at = now();
          return publishNew(unit, principal, await rowAt(unit.trx, at), at, (task) => ({ task: taskView(task, principal) }));
        },
        'one statement',
      );
    } catch (error) {
      if (!(error instanceof InsufficientBalance)) throw error;
      return idempotency.run(principal, request, 201, async (unit) => {
        const at = now();
        return publishRow(unit, principal, await insertRow(unit.trx, await rowAt(unit.trx, at)), at, true);
      });
    }
  }

  /**
   * draft -> open: holds the bounty; with too little money the task stays a draft (compare-and-set
   * on draft). `created`: the draft was written by this same request, so its stream hears of it
   * as a new task (published, or drafted when the money fell short).
   */
  async function publishRow(unit: UnitOfWork, principal: Principal, row: TaskRow, at: Date, created: boolean): Promise<TaskOutcome> {
    const { trx } = unit;
    nextTaskState(row.status, 'publish');
    const wanted = row.bounty_amount === null ? 0n : BigInt(row.bounty_amount);
    // A person's own key holds a bounty within its agent budget (money/budgets.ts); a draft holds, and is charged, nothing.
    await chargeBounty(trx, principal, row, 0n, wanted, at);
    const held = await changeHold(trx, { ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held: 0n, wanted, at });
    if (!held.ok) {
      await giveBackAgentBudget(trx, row.id);
      await events.taskMoved(unit, row, created ? 'draft' : 'update', created ? null : 'draft');
      return {
        task: taskView(row, principal),
        shortfall: { currency: row.bounty_currency, available: formatAmount(held.available), required: formatAmount(held.required) },
      };
    }
    const expiresAt = row.expires_at ?? deadlineOf(undefined, at);
    // A draft keeps the deadline it was given; once that has passed, it is not published expired.
    if (new Date(expiresAt).getTime() <= at.getTime()) {
      throw new AppError('validation_error', 'the deadline of this draft has passed: send a new expires_at', {
        errors: [{ path: 'body.expires_at', message: 'the stored deadline has passed: required' }],
      });
    }
    const [published] = (await trx('tasks')
      .where({ id: row.id, status: 'draft' })
      .update({ status: 'open', bounty_held: String(wanted), published_at: at, expires_at: expiresAt, updated_at: at })
      .returning([...taskColumns])) as TaskRow[];
    if (!published) throw new AppError('invalid_state_transition', 'the task changed while it was being published', { action: 'publish' });
    await events.taskMoved(unit, published, 'publish', created ? null : 'draft');
    return { task: taskView(published, principal) };
  }

  async function insertRow(trx: Knex, row: ReturnType<typeof newTaskRow>): Promise<TaskRow> {
    const [inserted] = (await trx('tasks')
      .insert(row)
      .returning([...taskColumns])) as TaskRow[];
    return inserted!;
  }

  /** Creates and publishes (holding the bounty), or stores a draft; keyed like every state-changing POST. */
  function create(principal: Principal, input: CreateTaskInput, request: IdempotencyRequest | null): Promise<Outcome<TaskOutcome>> {
    const { draft, ...fields } = input;
    if (!draft) return publishNewTask(principal, request, (_trx, at) => newTaskRow(principal, fields, at));
    return idempotency.run(principal, request, 201, async (unit) => {
      const row = await insertRow(unit.trx, newTaskRow(principal, fields, now()));
      await events.taskMoved(unit, row, 'draft', null);
      return { task: taskView(row, principal) };
    });
  }

  /**
   * Publishing a draft restates its delivery period (and may set bounty and deadline): one
   * statement that shares group commits (task-publish.ts); when the money is short, or the
   * statement cannot decide (a deadline passed, a draft that kept changing), the same request
   * again on the transaction path, which commits the restated fields of a draft kept for want of
   * money with its event and answers 4020 (a failed statement wrote nothing, its claim was let go).
   */
  async function publishDraft(principal: Principal, id: string, body: DraftRestated, request: IdempotencyRequest | null) {
    try {
      return await idempotency.run(
        principal,
        request,
        200,
        (unit) => publishOne(unit, principal, id, body, now, (task): TaskOutcome => ({ task: taskView(task, principal) })),
        'one statement',
      );
    } catch (error) {
      if (!(error instanceof InsufficientBalance || error instanceof DecideInTransaction)) throw error;
      return idempotency.run(principal, request, 200, async (unit) => {
        const { trx } = unit;
        const row = authorize(manageTask, principal, await lockTask(trx, id), 'task');
        nextTaskState(row.status, 'publish');
        const at = now();
        const changes: Record<string, unknown> = { delivery_hours: body.delivery_hours, updated_at: at };
        if (body.bounty_amount !== undefined) changes.bounty_amount = body.bounty_amount === null ? null : String(body.bounty_amount);
        if (body.expires_at !== undefined) changes.expires_at = deadlineOf(body.expires_at, at);
        const [changed] = (await trx('tasks')
          .where({ id })
          .update(changes)
          .returning([...taskColumns])) as TaskRow[];
        return publishRow(unit, principal, changed!, at, false);
      });
    }
  }

  async function get(principal: Principal, id: string): Promise<TaskView> {
    return taskView(authorize(seeTask, principal, await findTask(db, id), 'task'), principal);
  }

  async function listMine(principal: Principal, query: { status?: string; page: number; page_size: number; cursor?: string }) {
    const filtered = () => {
      const rows = db<TaskRow>('tasks').where('owner_user_id', principal.user_id).where('owner_type', principal.caller_type);
      return query.status ? rows.where('status', query.status) : rows;
    };
    const listed = await newestFirstPage<TaskRow>(filtered, query, { select: taskColumns });
    return { ...listed, items: listed.items.map((row) => taskView(row, principal)) };
  }

  /**
   * A move that ends the task (close, cancel, expire) in a transaction of its own: its hold released
   * in the same transaction. Only for a move the one-statement path (task-end.ts) left undecided.
   */
  async function end(unit: UnitOfWork, row: TaskRow, action: 'close' | 'cancel' | 'expire', viewer: Principal | null): Promise<TaskView> {
    const { trx } = unit;
    const transition = nextTaskState(row.status, action);
    const at = now();
    // What the hold was charged to an agent budget goes back with it.
    await giveBackAgentBudget(trx, row.id);
    await changeHold(trx, { ownerId: row.owner_user_id, currency: row.bounty_currency, taskId: row.id, held: BigInt(row.bounty_held), wanted: 0n, at });
    const [ended] = (await trx('tasks')
      .where({ id: row.id, status: row.status })
      .update({ status: transition.to, bounty_held: '0', ended_at: at, updated_at: at })
      .returning([...taskColumns])) as TaskRow[];
    // Its pending applicants hear of the end first (read from the pending applications), then
    // those applications end with it, as in the one-statement path (store/change-tasks.ts).
    await events.taskMoved(unit, ended!, action, row.status);
    const rejected = (await trx('task_applications')
      .where({ task_id: row.id, status: 'pending' })
      .update({ status: 'rejected', decided_at: at })
      .returning('*')) as ApplicationRow[];
    await events.applicationsMoved(
      unit,
      ended!,
      rejected.map((application) => ({ application, action, previousStatus: 'pending' })),
    );
    return taskView(ended!, viewer);
  }

  /**
   * Ends the task as its publisher (close) or the operator (cancel, `viewer` null): one statement
   * that shares group commits (task-end.ts); a task that kept changing under its compare-and-set
   * goes to the transaction path, which locks the row and decides as before.
   */
  async function endByRequest(viewer: Principal | null, id: string, action: 'close' | 'cancel', request: IdempotencyRequest | null) {
    try {
      return await idempotency.run(viewer, request, 200, (unit) => endTask(unit, viewer, id, action, now, (task) => taskView(task, viewer)), 'one statement');
    } catch (error) {
      if (!(error instanceof DecideInTransaction)) throw error;
      return idempotency.run(viewer, request, 200, async (unit) => {
        const row = await lockTask(unit.trx, id);
        if (!viewer && !row) throw new AppError('not_found', 'task not found');
        return end(unit, viewer ? authorize(manageTask, viewer, row, 'task') : row!, action, viewer);
      });
    }
  }

  const close = (principal: Principal, id: string, request: IdempotencyRequest | null) => endByRequest(principal, id, 'close', request);

  /** The operator takes an open task down (cancelled), releasing its hold. */
  const cancel = (id: string, request: IdempotencyRequest | null) => endByRequest(null, id, 'cancel', request);

  /** Publishes a new task from one of the caller's, with the restated fields (delivery_hours, bounty) and any others changed. */
  function reuse(
    principal: Principal,
    id: string,
    body: Omit<UpdateTaskInput, 'bounty_amount' | 'delivery_hours'> & { delivery_hours: number; bounty_amount: bigint | null },
    request: IdempotencyRequest | null,
  ) {
    // The old task is read in the publish's own round (the pool, or the fallback's transaction).
    return publishNewTask(principal, request, async (trx, at) => {
      const old = authorize(manageTask, principal, await findTask(trx, id), 'task');
      const input: Omit<CreateTaskInput, 'draft'> = {
        title: body.title ?? old.title,
        description: body.description ?? old.description,
        mode: body.mode ?? old.mode,
        city: (body.city === undefined ? old.city : body.city) ?? undefined,
        category: body.category ?? old.category ?? undefined,
        tags: body.tags ?? old.tags,
        image_urls: body.image_urls ?? old.image_urls,
        contact_info: (body.contact_info === undefined ? old.contact_info : body.contact_info) ?? undefined,
        bounty_amount: body.bounty_amount ?? undefined,
        bounty_currency: body.bounty_currency,
        delivery_hours: body.delivery_hours,
        preferred_billing_model: (body.preferred_billing_model ?? old.preferred_billing_model ?? undefined) as CreateTaskInput['preferred_billing_model'],
        estimated_quantity: body.estimated_quantity ?? old.estimated_quantity ?? undefined,
        expires_at: body.expires_at,
      };
      const problems = taskShapeProblems(input);
      if (problems.length > 0)
        throw new AppError('validation_error', problems[0]!.message, {
          errors: problems.map((problem) => ({ path: `body.${problem.path}`, message: problem.message })),
        });
      return newTaskRow(principal, input, at, old.id);
    });
  }

  return { create, publishDraft, get, listMine, update, close, cancel, expireDue, reuse };
}

export type TaskEngine = ReturnType<typeof createTaskEngine>;
