import { randomUUID } from 'node:crypto';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { wordColumnsOf } from '../../domain/term-vectors.ts';
import type { TaskStatus } from '../../domain/tasks.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type CreateTaskInput, type TaskView, type UpdateTaskInput, taskShapeProblems } from '../../schemas/tasks.ts';
import type { TaskRow } from '../../store/tasks.ts';
import type { Principal } from '../common/index.ts';

/** Rows of tasks: what create inserts, what an update changes, how a row is shown. */
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
const dayMs = 24 * 60 * 60 * 1000;
const refuse = (path: string, message: string) => new AppError('validation_error', message, { errors: [{ path: `body.${path}`, message }] });

/** The bounty currency is the space's: UT for agents, CNY for people; naming another is 4000. */
export function checkCurrency(principal: Principal, given: string | undefined) {
  const expected = currencyOfSpace(principal.caller_type);
  if (given !== undefined && given !== expected) throw refuse('bounty_currency', `must be ${expected} in the ${principal.caller_type} space`);
  return expected;
}

/** A deadline in the future and within the longest lifetime; none: the default lifetime from `at`. */
export function deadlineOf(given: string | undefined, at: Date): Date {
  if (given === undefined) return new Date(at.getTime() + limits.taskLifetimeDaysDefault * dayMs);
  const deadline = new Date(given);
  if (deadline.getTime() <= at.getTime()) throw refuse('expires_at', 'must be in the future');
  if (deadline.getTime() > at.getTime() + limits.taskLifetimeDaysMax * dayMs) throw refuse('expires_at', `must be within ${limits.taskLifetimeDaysMax} days`);
  return deadline;
}

/**
 * The status a task has for a move made at `at`: an open task past its deadline is expired,
 * whether the sweeper has moved it yet or not (docs/tasks.md "Expiry"). Every move that takes
 * work or money on (apply, accept, push, select, answer a push, update) decides on this, read
 * from the row of its own database transaction, so nothing waits on the sweeper's next round.
 */
export function statusAt(row: Pick<TaskRow, 'status' | 'expires_at'>, at: Date): TaskStatus {
  if (row.status === 'open' && row.expires_at !== null && new Date(row.expires_at).getTime() <= at.getTime()) return 'expired';
  return row.status;
}

export function newTaskRow(principal: Principal, input: Omit<CreateTaskInput, 'draft'>, at: Date, reusedFrom: string | null = null) {
  const tags = input.tags ?? [];
  return {
    id: randomUUID(),
    owner_user_id: principal.user_id,
    owner_type: principal.caller_type,
    title: input.title,
    description: input.description,
    mode: input.mode,
    city: input.city ?? null,
    category: input.category ?? null,
    tags: JSON.stringify(tags),
    image_urls: JSON.stringify(input.image_urls ?? []),
    contact_info: input.contact_info ? JSON.stringify(input.contact_info) : null,
    bounty_amount: input.bounty_amount === undefined ? null : String(input.bounty_amount),
    bounty_currency: checkCurrency(principal, input.bounty_currency),
    bounty_held: '0',
    delivery_hours: input.delivery_hours ?? null,
    preferred_billing_model: input.preferred_billing_model ?? null,
    estimated_quantity: input.estimated_quantity ?? null,
    status: 'draft',
    matched_skill_id: null,
    transaction_id: null,
    reused_from: reusedFrom,
    ...wordColumnsOf({ title: input.title, description: input.description, tags }),
    created_at: at,
    updated_at: at,
    published_at: null,
    expires_at: input.expires_at === undefined ? null : deadlineOf(input.expires_at, at),
  };
}

/** The columns a partial update sets, checked on what it leaves (an offline task keeps a city). */
export function changedTaskColumns(principal: Principal, row: TaskRow, patch: UpdateTaskInput, at: Date): Record<string, unknown> {
  const merged = { ...row, ...patch };
  for (const problem of taskShapeProblems(merged)) throw refuse(problem.path, problem.message);
  checkCurrency(principal, patch.bounty_currency);
  const columns: Record<string, unknown> = {
    title: patch.title,
    description: patch.description,
    mode: patch.mode,
    city: patch.city,
    category: patch.category,
    tags: patch.tags === undefined ? undefined : JSON.stringify(patch.tags),
    image_urls: patch.image_urls === undefined ? undefined : JSON.stringify(patch.image_urls),
    contact_info: patch.contact_info === undefined ? undefined : patch.contact_info === null ? null : JSON.stringify(patch.contact_info),
    bounty_amount: patch.bounty_amount === undefined ? undefined : patch.bounty_amount === null ? null : String(patch.bounty_amount),
    delivery_hours: patch.delivery_hours,
    preferred_billing_model: patch.preferred_billing_model,
    estimated_quantity: patch.estimated_quantity,
    expires_at: patch.expires_at === undefined ? undefined : deadlineOf(patch.expires_at, at),
  };
  for (const key of Object.keys(columns)) if (columns[key] === undefined) delete columns[key];
  if (patch.title !== undefined || patch.description !== undefined || patch.tags !== undefined) {
    Object.assign(columns, wordColumnsOf({ title: merged.title, description: merged.description, tags: merged.tags }));
  }
  return columns;
}

/** How a task is shown; its contact details only to its publisher. */
export function taskView(row: TaskRow, viewer: Pick<Principal, 'user_id'> | null): TaskView {
  return {
    id: row.id,
    user_id: row.owner_user_id,
    owner_type: row.owner_type,
    title: row.title,
    description: row.description,
    mode: row.mode,
    status: row.status,
    city: row.city,
    category: row.category,
    tags: row.tags,
    image_urls: row.image_urls,
    contact_info: viewer?.user_id === row.owner_user_id ? row.contact_info : null,
    bounty_amount: row.bounty_amount === null ? null : formatAmount(row.bounty_amount),
    bounty_currency: row.bounty_currency,
    bounty_held: formatAmount(row.bounty_held),
    delivery_hours: row.delivery_hours,
    preferred_billing_model: row.preferred_billing_model,
    estimated_quantity: row.estimated_quantity,
    matched_skill_id: row.matched_skill_id,
    transaction_id: row.transaction_id,
    reused_from: row.reused_from,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    published_at: iso(row.published_at),
    expires_at: iso(row.expires_at),
    ended_at: iso(row.ended_at),
  };
}
