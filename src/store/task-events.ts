import type { Knex } from 'knex';
import type { CallerType } from '../engine/common/index.ts';

/** A row of task_events (migration 025): one event of a task, for one recipient. */
export interface TaskEventRow {
  id: string;
  recipient_user_id: string;
  recipient_sequence: string;
  space: CallerType;
  task_id: string;
  application_id: string | null;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

export interface NewTaskEvent {
  recipientUserId: string;
  space: CallerType;
  taskId: string;
  applicationId: string | null;
  type: string;
  payload: Record<string, unknown>;
}

/**
 * Writes events in the caller's database transaction, numbered per recipient without gaps: each
 * recipient's counter is bumped by its number of events (created at its first event), then the
 * rows are inserted with the numbers the bump made room for. The counters are locked in sorted
 * order, so two moves with recipients in common cannot deadlock on them; a counter row stays
 * locked until COMMIT, so a recipient's numbers are committed in order.
 */
export async function writeTaskEvents(trx: Knex, events: readonly NewTaskEvent[], at: Date): Promise<TaskEventRow[]> {
  if (events.length === 0) return [];
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.recipientUserId, (counts.get(event.recipientUserId) ?? 0) + 1);
  const recipients = [...counts.keys()].sort();
  const bumped = await trx.raw(
    `INSERT INTO task_event_streams (owner_user_id, last_sequence) VALUES ${recipients.map(() => '(?::uuid, ?::bigint)').join(', ')}
     ON CONFLICT (owner_user_id) DO UPDATE SET last_sequence = task_event_streams.last_sequence + EXCLUDED.last_sequence
     RETURNING owner_user_id, last_sequence::text AS last_sequence`,
    recipients.flatMap((recipient) => [recipient, counts.get(recipient)!]),
  );
  // The next number of each recipient: the first of the block the bump reserved.
  const next = new Map<string, bigint>();
  for (const row of bumped.rows as { owner_user_id: string; last_sequence: string }[]) {
    next.set(row.owner_user_id, BigInt(row.last_sequence) - BigInt(counts.get(row.owner_user_id)!) + 1n);
  }
  const rows = events.map((event) => {
    const sequence = next.get(event.recipientUserId)!;
    next.set(event.recipientUserId, sequence + 1n);
    return {
      recipient_user_id: event.recipientUserId,
      recipient_sequence: String(sequence),
      space: event.space,
      task_id: event.taskId,
      application_id: event.applicationId,
      event_type: event.type,
      payload: JSON.stringify(event.payload),
      created_at: at,
    };
  });
  const inserted = (await trx('task_events').insert(rows).returning(['id', 'recipient_user_id', 'recipient_sequence'])) as {
    id: string | number;
    recipient_user_id: string;
    recipient_sequence: string | number;
  }[];
  // Matched by (recipient, sequence), not by position: RETURNING promises no order.
  const idOf = new Map(inserted.map((row) => [`${row.recipient_user_id}/${row.recipient_sequence}`, String(row.id)]));
  return rows.map((row, index) => ({ ...row, id: idOf.get(`${row.recipient_user_id}/${row.recipient_sequence}`)!, payload: events[index]!.payload }));
}
