import type { TaskEventRow } from '../store/task-events.ts';
import type { Feed } from './publisher.ts';

/**
 * Task events on the bus (docs/tasks.md "Task events"): each is one recipient's, numbered in
 * that recipient's task stream, so an instance hands it to that user's local subscribers only.
 */
export const taskEventsChannel = 'marketplace:task-events';

export interface PublishedTaskEvent {
  id: string;
  /** The position in the recipient's task stream: the SSE `id`, what Last-Event-ID names. */
  sequence: string;
  recipient_user_id: string;
  space: string;
  task_id: string;
  application_id: string | null;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
}

export function toPublishedTaskEvent(row: TaskEventRow): PublishedTaskEvent {
  return {
    id: String(row.id),
    sequence: String(row.recipient_sequence),
    recipient_user_id: row.recipient_user_id,
    space: row.space,
    task_id: row.task_id,
    application_id: row.application_id,
    type: row.event_type,
    data: row.payload,
    created_at: new Date(row.created_at).toISOString(),
  };
}

export const taskFeed: Feed<TaskEventRow> = { table: 'task_events', channel: taskEventsChannel, message: (row) => JSON.stringify(toPublishedTaskEvent(row)) };
