import type { AcceptanceParts } from './change-acceptances.ts';
import { columnsOf, patchAssignments } from './change-columns.ts';
import type { NewTaskEvent, TaskEventRow } from './task-events.ts';

/**
 * A task published with its bounty held, inside a change statement (store/change.ts;
 * docs/decisions/money-and-escrow.md "Task money and group commit"): the task row inserted open
 * (a new task) or moved from draft to open by a compare-and-set (a draft published),
 * the hold's legs (the change's, referring to the task) and the task's events, numbered per
 * recipient in task_event_streams, so that a publish shares group commits with every other change
 * and its row, money and events commit or fail together.
 */
export interface TaskChangeParts {
  transactionId: string;
  write:
    | { kind: 'insert_task'; values: Record<string, unknown> }
    | { kind: 'update_task'; fromStatus: string; fromVersion: string; set: Record<string, unknown> }
    | { kind: string };
  taskEvents?: NewTaskEvent[];
  at: Date;
  acceptance?: AcceptanceParts;
}

type TaskUpdate = { kind: 'update_task'; fromStatus: string; fromVersion: string; set: Record<string, unknown> };

interface TaskUpdateRecord {
  ordinal: number;
  id: string;
  write: TaskUpdate;
  alone: boolean;
}

interface Numbered {
  change: TaskChangeParts;
  ordinal: number;
}

/**
 * The new task rows (`task_insert_input`, `task_inserted`), written only for an allowed change
 * (its claim held) and, for a budgeted one, only if its take was (`gate`). A new row locks nothing
 * another statement waits for.
 */
export function taskInsertClauses(numbered: Numbered[], bindings: unknown[]): { reads: string[]; write: (gate: string) => string; source: string } {
  const inserts = numbered.filter(({ change }) => change.write.kind === 'insert_task');
  const columns = columnsOf(inserts.map(({ change }) => (change.write as { values: Record<string, unknown> }).values));
  bindings.push(JSON.stringify(inserts.map(({ change, ordinal }) => ({ ordinal, fields: (change.write as { values: object }).values }))));
  return {
    reads: [
      `task_insert_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS input(ordinal int, fields jsonb) WHERE input.ordinal IN (SELECT ordinal FROM allowed))`,
    ],
    write: (gate) => `task_inserted AS (INSERT INTO tasks (${columns.join(', ')})
        SELECT ${columns.map((column) => `fresh.${column}`).join(', ')}
          FROM task_insert_input CROSS JOIN LATERAL jsonb_populate_record(NULL::tasks, task_insert_input.fields) AS fresh
         WHERE true ${gate}
         ORDER BY task_insert_input.ordinal RETURNING id)`,
    source:
      "SELECT task_insert_input.ordinal, task_inserted.id FROM task_inserted JOIN task_insert_input ON (task_insert_input.fields->>'id')::uuid = task_inserted.id",
  };
}

/**
 * A task moved (a draft published, an update, a close, an expiry; engine/work/task-publish.ts,
 * task-update.ts, task-end.ts) or matched by an acceptance: the compare-and-set of the task rows as one
 * UPDATE (`task_update_input`, `locked_tasks`, `task_updated`), written only if the row still has
 * the status and the version (its `xmin`, which every committed UPDATE of the row renews, however
 * close in time) the publish was decided on, and, for a budgeted one, only if its take was (`gate`).
 * The rows are locked in id order before the UPDATE reads one, after the transaction rows and
 * before the usage rows (budget_due reads `locked_tasks`, and the takes are sorted before any is
 * written), so before anything a task path in its own transaction locks after the task row. A
 * column some changes set and others do not is set to itself where a change leaves it alone.
 */
export function taskUpdateClauses(numbered: Numbered[], bindings: unknown[]): { reads: string[]; write: (gate: string) => string; source: string } {
  const updates = taskUpdatesOf(numbered);
  const sets = updates.map(({ write }) => write.set);
  const assignments = patchAssignments(sets, columnsOf(sets));
  bindings.push(
    JSON.stringify(
      updates.map(({ ordinal, id, write, alone }) => ({
        ordinal,
        id,
        from_status: write.fromStatus,
        from_version: write.fromVersion,
        patch: write.set,
        alone,
      })),
    ),
  );
  return {
    reads: [
      `task_update_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS input(ordinal int, id uuid, from_status text, from_version text, patch jsonb, alone boolean)
      WHERE input.ordinal IN (SELECT ordinal FROM allowed))`,
      // As for the transactions: the ids as one array, locked in id order; a row that waited is seen as committed since.
      'locked_tasks AS (SELECT id, status, xmin::text AS version FROM tasks WHERE id = ANY (ARRAY(SELECT id FROM task_update_input)) ORDER BY id FOR NO KEY UPDATE)',
    ],
    write: (gate) => `task_updated AS (UPDATE tasks AS target SET ${assignments.join(', ')}
       FROM task_update_input AS input CROSS JOIN LATERAL jsonb_populate_record(NULL::tasks, input.patch) AS patched
      WHERE target.id = ANY (ARRAY(SELECT id FROM locked_tasks))
        AND target.id = input.id AND target.status = input.from_status AND target.xmin::text = input.from_version
        ${gate}
      RETURNING input.ordinal, target.id, input.alone, target.status, target.ended_at),
      ${endedApplications}`,
    // An acceptance's row is its transaction's insert, which its task's write gates (store/change.ts).
    source: 'SELECT ordinal, id FROM task_updated WHERE alone',
  };
}

/**
 * A task that ends (closed, cancelled, expired) takes its pending applications with it, rejected
 * when it ended: left pending they would still count against each applicant's caps (2 per task,
 * 50 in all; docs/tasks.md) and could still be rejected or accepted on a task that is over. The
 * task row is held by then, as in the acceptance's rejections (change-acceptances.ts).
 */
const endedApplications = `ended_task_applications AS (UPDATE task_applications AS application SET status = 'rejected', decided_at = ended.ended_at
      FROM task_updated AS ended
     WHERE ended.status IN ('closed', 'cancelled', 'expired') AND application.task_id = ended.id AND application.status = 'pending'
    RETURNING application.id)`;

/**
 * The task compare-and-sets of the statement: a task move's own row write (`alone`), or an
 * acceptance's task matched beside its transaction's insert (change-acceptances.ts).
 */
function taskUpdatesOf(numbered: Numbered[]): TaskUpdateRecord[] {
  return numbered.flatMap(({ change, ordinal }): TaskUpdateRecord[] => {
    if (change.write.kind === 'update_task') return [{ ordinal, id: change.transactionId, write: change.write as TaskUpdate, alone: true }];
    const accepted = change.acceptance;
    if (!accepted) return [];
    const write: TaskUpdate = { kind: 'update_task', fromStatus: 'open', fromVersion: accepted.fromVersion, set: accepted.taskSet };
    return [{ ordinal, id: accepted.taskId, write, alone: false }];
  });
}

/**
 * The task events of the written changes, numbered per recipient as store/task-events.ts does:
 * each recipient's counter is bumped once by its events of the statement (created at its first),
 * in recipient order, and its events take the numbers before the new value in the order of
 * ordinal, then event. The counters are locked after the accounts (`after`, the balances CTE, is
 * read first), the order of the task paths that still run in a transaction of their own (the hold,
 * then the events), so that neither waits for the other in a circle.
 */
export function taskEventClauses(numbered: Numbered[], bindings: unknown[], after: string | null): string[] {
  const records = numbered.flatMap(({ change, ordinal }) =>
    (change.taskEvents ?? []).map((event, index) => ({
      ordinal,
      position: index + 1,
      recipient_user_id: event.recipientUserId,
      space: event.space,
      task_id: event.taskId,
      application_id: event.applicationId,
      event_type: event.type,
      payload: event.payload,
      created_at: change.at,
    })),
  );
  bindings.push(JSON.stringify(records));
  return [
    `task_event_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS event(ordinal int, position int, recipient_user_id uuid, space text, task_id uuid,
        application_id uuid, event_type text, payload jsonb, created_at timestamptz)
      WHERE event.ordinal IN (SELECT ordinal FROM changed)${after ? ` AND (SELECT count(*) FROM ${after}) >= 0` : ''})`,
    `task_streams AS (INSERT INTO task_event_streams (owner_user_id, last_sequence)
        SELECT recipient_user_id, count(*) FROM task_event_input GROUP BY recipient_user_id ORDER BY recipient_user_id
      ON CONFLICT (owner_user_id) DO UPDATE SET last_sequence = task_event_streams.last_sequence + EXCLUDED.last_sequence
      RETURNING owner_user_id, last_sequence)`,
    `task_events_written AS (INSERT INTO task_events (recipient_user_id, recipient_sequence, space, task_id, application_id, event_type, payload, created_at)
      SELECT event.recipient_user_id,
             stream.last_sequence + 1 - row_number() OVER (PARTITION BY event.recipient_user_id ORDER BY event.ordinal DESC, event.position DESC),
             event.space, event.task_id, event.application_id, event.event_type, event.payload, event.created_at
        FROM task_event_input AS event JOIN task_streams AS stream ON stream.owner_user_id = event.recipient_user_id
       ORDER BY event.ordinal, event.position
      RETURNING id, recipient_user_id, recipient_sequence)`,
  ];
}

/** The final SELECT's rows of the task events written: (ordinal, position) found again by (recipient, sequence). */
export const taskEventResultClause = `SELECT 'task_event', NULL::int, NULL::int, task_events_written.id::text,
    task_events_written.recipient_user_id::text, task_events_written.recipient_sequence::text FROM task_events_written`;

/**
 * The written task events of one change, as task-events.ts answers them. Rows come as (id,
 * recipient, sequence); a change's events are its recipients' numbers in its order, matched by
 * recipient and the order of numbers (RETURNING promises no order).
 */
export function taskEventRowsOf(
  numbered: Numbered[],
  written: Set<number>,
  rows: { id: string; recipient: string; sequence: string }[],
): Map<number, TaskEventRow[]> {
  // Each recipient's numbers in ascending order belong to the events in (ordinal, position) order.
  const byRecipient = new Map<string, { id: string; sequence: string }[]>();
  for (const row of rows) byRecipient.set(row.recipient, [...(byRecipient.get(row.recipient) ?? []), row]);
  for (const list of byRecipient.values()) list.sort((a, b) => (BigInt(a.sequence) < BigInt(b.sequence) ? -1 : 1));
  const result = new Map<number, TaskEventRow[]>();
  for (const { change, ordinal } of numbered.filter((each) => written.has(each.ordinal))) {
    const events: TaskEventRow[] = [];
    for (const event of change.taskEvents ?? []) {
      const row = byRecipient.get(event.recipientUserId)?.shift();
      if (!row) break;
      events.push({
        id: row.id,
        recipient_user_id: event.recipientUserId,
        recipient_sequence: row.sequence,
        space: event.space,
        task_id: event.taskId,
        application_id: event.applicationId,
        event_type: event.type,
        payload: event.payload,
        created_at: change.at,
      });
    }
    result.set(ordinal, events);
  }
  return result;
}
