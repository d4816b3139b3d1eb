import type { Knex } from 'knex';
import { formatAmount } from '../../domain/money.ts';
import { type ApplicationEventAction, type TaskEventAction, applicationEventTypes, taskEventTypes } from '../../domain/tasks.ts';
import type { UnitOfWork } from '../../db/transaction.ts';
import type { EventHub } from '../../events/hub.ts';
import { createPublisher } from '../../events/publisher.ts';
import type { StreamListener, SubscribeOptions, Subscription } from '../../events/stream-types.ts';
import { type PublishedTaskEvent, taskFeed } from '../../events/task-feed.ts';
import { type NewTaskEvent, type TaskEventRow, writeTaskEvents } from '../../store/task-events.ts';
import type { TaskRow } from '../../store/tasks.ts';
import type { z } from 'zod';
import type { taskEventSummary as taskEventSummarySchema } from '../../schemas/tasks.ts';
import { type ApplicationRow, applicationView } from './application-rows.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/**
 * The task stream (docs/tasks.md "Task events"): every move of a task and of its applications,
 * written in the move's own database transaction and published after COMMIT, so a move that rolls
 * back is never heard, and a move that commits is heard by each recipient exactly once, in order
 * (Last-Event-ID replays from the table, as for transaction streams).
 */

/** What an event says about its task: enough to act on, without the long fields (GET the task for those). */
export function taskEventSummary(task: TaskRow): z.infer<typeof taskEventSummarySchema> {
  const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());
  return {
    id: task.id,
    title: task.title,
    status: task.status,
    owner_type: task.owner_type,
    user_id: task.owner_user_id,
    bounty_amount: task.bounty_amount === null ? null : formatAmount(task.bounty_amount),
    bounty_currency: task.bounty_currency,
    bounty_held: formatAmount(task.bounty_held),
    delivery_hours: task.delivery_hours,
    expires_at: iso(task.expires_at),
    transaction_id: task.transaction_id,
    matched_skill_id: task.matched_skill_id,
    updated_at: iso(task.updated_at)!,
  };
}

/** The events of a task's move: one for its publisher and one for each applicant named. */
export function taskMovedEvents(task: TaskRow, action: TaskEventAction, previousStatus: string | null, applicants: string[]): NewTaskEvent[] {
  const payload = { action, previous_status: previousStatus, task: taskEventSummary(task) };
  return [task.owner_user_id, ...applicants].map((recipientUserId) => ({
    recipientUserId,
    space: task.owner_type,
    taskId: task.id,
    applicationId: null,
    type: taskEventTypes[action],
    payload,
  }));
}

export interface ApplicationMove {
  application: ApplicationRow;
  action: ApplicationEventAction;
  previousStatus: string | null;
}

/** The events of moves of applications of one task: each heard by the publisher and its applicant. */
export function applicationMovedEvents(task: TaskRow, moves: ApplicationMove[]): NewTaskEvent[] {
  return moves.flatMap(({ application, action, previousStatus }) => {
    const payload = { action, previous_status: previousStatus, application: applicationView(application), task: taskEventSummary(task) };
    return [task.owner_user_id, application.applicant_id].map((recipientUserId) => ({
      recipientUserId,
      space: task.owner_type,
      taskId: task.id,
      applicationId: application.id,
      type: applicationEventTypes[action],
      payload,
    }));
  });
}

/** The applicants who hear a task's moves: those with a pending application (at most taskPendingApplicationsMax). */
export async function pendingApplicants(trx: Knex, taskId: string): Promise<string[]> {
  const rows = (await trx('task_applications').where({ task_id: taskId, status: 'pending' }).distinct('applicant_id')) as { applicant_id: string }[];
  return rows.map((row) => row.applicant_id);
}

/** A task stream shows the caller's space only: one rule for every stream, asked with each stream's principal. */
const inSpaceOf = (event: PublishedTaskEvent, principal: Principal) => event.space === principal.caller_type;

export function createTaskEvents({ bus, asyncCommitDb, log, now }: EngineDependencies, hub: EventHub) {
  // As for transaction events: losing a published mark in a crash only makes the relay publish the row again.
  const publisher = createPublisher(bus, asyncCommitDb, log, taskFeed);

  async function record(unit: UnitOfWork, events: NewTaskEvent[]) {
    const rows = await writeTaskEvents(unit.trx, events, now());
    for (const row of rows) unit.afterCommit(() => publisher.publish(row));
  }

  /** A task's move, heard by its publisher and its pending applicants (read in the move's transaction). */
  async function taskMoved(unit: UnitOfWork, task: TaskRow, action: TaskEventAction, previousStatus: string | null) {
    await record(unit, taskMovedEvents(task, action, previousStatus, await pendingApplicants(unit.trx, task.id)));
  }

  /** Moves of applications of one task, each heard by the publisher and its applicant. */
  async function applicationsMoved(unit: UnitOfWork, task: TaskRow, moves: ApplicationMove[]) {
    await record(unit, applicationMovedEvents(task, moves));
  }

  /** The caller's task stream, of the caller's space only (an event of the other space still advances the position). */
  function subscribe(principal: Principal, options: SubscribeOptions, listener: StreamListener<PublishedTaskEvent>): Promise<Subscription> {
    return hub.subscribeTaskEvents(principal.user_id, options, listener, inSpaceOf, principal);
  }

  /** Events a change statement wrote (engine/work/task-publish.ts), published once it is committed. */
  function written(unit: UnitOfWork, rows: TaskEventRow[]) {
    for (const row of rows) unit.afterCommit(() => publisher.publish(row));
  }

  return { taskMoved, applicationsMoved, written, subscribe, flush: () => publisher.flush(), close: () => publisher.close() };
}

export type TaskEvents = ReturnType<typeof createTaskEvents>;
