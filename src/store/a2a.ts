import type { Knex } from 'knex';
import { type NeutralPart, partsForHistory } from '../domain/a2a.ts';
import { limits } from '../limits.ts';
import { isUuid } from '../domain/ids.ts';
import { prepared } from '../db/prepared.ts';
import { type TransactionRow, listQuery } from './transactions.ts';

/** Rows of the A2A gateway's tables (migration 013) and the queries the engine's a2a module runs. */
export type ConversationStatus = 'choosing' | 'bought' | 'cancelled';

export interface Candidate {
  number: number;
  capability_id: string;
  title: string;
  price: string;
  currency: string;
  pricing_model: string;
  score: number;
}

export interface A2ATaskRow {
  id: string;
  kind: 'conversation' | 'purchase';
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  context_id: string;
  client_context_id: string | null;
  client_task_id: string | null;
  demand_id: string | null;
  transaction_id: string | null;
  status: ConversationStatus | null;
  candidates: Candidate[] | null;
  created_at: Date;
  updated_at: Date;
}

export interface A2AMessageRow {
  sequence: string;
  task_id: string;
  message_id: string;
  role: 'user' | 'agent';
  parts: NeutralPart[];
  created_at: Date;
}

export interface NewMessage {
  task_id: string;
  message_id: string;
  role: 'user' | 'agent';
  parts: NeutralPart[];
  created_at: Date;
}

/** A conversation of the owner's, named by its id or by the v0.1 client id it was started with. */
export function findConversation(db: Knex, owner: { user_id: string; caller_type: string }, id: string): Promise<A2ATaskRow | undefined> {
  return db<A2ATaskRow>('a2a_tasks')
    .where({ kind: 'conversation', owner_user_id: owner.user_id, owner_type: owner.caller_type as A2ATaskRow['owner_type'] })
    .where((named) => {
      named.where({ client_task_id: id });
      if (isUuid(id)) named.orWhere({ id: id.toLowerCase() });
    })
    .first();
}

export const findTaskRow = (db: Knex, id: string): Promise<A2ATaskRow | undefined> => db<A2ATaskRow>('a2a_tasks').where({ id }).first();

/** The rows (conversation or purchase) that name these transactions. */
export const taskRowsOfTransactions = (db: Knex, transactionIds: string[]): Promise<A2ATaskRow[]> =>
  transactionIds.length === 0 ? Promise.resolve([]) : db<A2ATaskRow>('a2a_tasks').whereIn('transaction_id', transactionIds);

/** Stored once: a retried message (same task, role and id) is ignored; its parts are bounded in bytes. */
export async function insertMessages(trx: Knex, messages: NewMessage[]) {
  if (messages.length === 0) return;
  await trx('a2a_messages')
    .insert(messages.map((message) => ({ ...message, parts: JSON.stringify(partsForHistory(message.parts, limits.a2aStoredPartsBytesMax)) })))
    .onConflict(['task_id', 'role', 'message_id'])
    .ignore();
}

/**
 * The newest `perTaskMax` messages of each task, oldest first. One query for any number of tasks
 * (a list page), so a long conversation costs no more than its newest messages.
 */
export async function newestMessages(db: Knex, taskIds: string[], perTaskMax: number): Promise<Map<string, A2AMessageRow[]>> {
  const byTask = new Map<string, A2AMessageRow[]>();
  if (taskIds.length === 0 || perTaskMax <= 0) return byTask;
  const rows = (await db
    .select('*')
    .from(
      db('a2a_messages')
        .whereIn('task_id', taskIds)
        .select('*', db.raw('row_number() OVER (PARTITION BY task_id ORDER BY created_at DESC, sequence DESC) AS newest'))
        .as('ranked'),
    )
    .where('newest', '<=', perTaskMax)
    .orderBy([{ column: 'created_at' }, { column: 'sequence' }])) as A2AMessageRow[];
  for (const row of rows) {
    const list = byTask.get(row.task_id) ?? [];
    list.push(row);
    byTask.set(row.task_id, list);
  }
  return byTask;
}

/** The row of a purchase task (the transaction's own id), created once, by its first A2A message. */
export async function ensurePurchaseRow(
  trx: Knex,
  row: Pick<A2ATaskRow, 'id' | 'owner_user_id' | 'owner_type' | 'context_id' | 'client_context_id'> & { at: Date },
) {
  const { at, ...fields } = row;
  await trx('a2a_tasks')
    .insert({ ...fields, kind: 'purchase', transaction_id: row.id, status: null, created_at: at, updated_at: at })
    .onConflict(['id'])
    .ignore();
}

export interface TaskListFilter {
  userId: string;
  space: 'agent' | 'human';
  /** Any of these phases: a transaction's status, or `choosing` / `open` / `cancelled` of a conversation before its pick. */
  phases?: readonly string[];
  contextId?: string;
  /** Only tasks whose status changed at or after this instant (ISO 8601 with a zone). */
  updatedSince?: string;
}

/** One row of the task list: the id the task is listed as, its transaction if any, and what it is filtered and ordered by. */
export interface TaskListRow {
  task_id: string;
  transaction_id: string | null;
  phase: string;
  context_id: string;
  updated_at: Date;
}

/**
 * The A2A tasks a user sees, as one relation (ListTasks): the user's own conversations (listed by
 * the conversation's id; once bought, with the transaction's status and time), and every other
 * transaction the user is a party to (listed by its id). A bought conversation's transaction is
 * thus listed once, under the conversation, to its owner; its seller sees the transaction.
 * A conversation without candidates is `open` (see engine/a2a phaseOf).
 */
export function taskListQuery(db: Knex, filter: TaskListFilter) {
  const owner = { 'c.kind': 'conversation', 'c.owner_user_id': filter.userId, 'c.owner_type': filter.space };
  const conversations = db('a2a_tasks as c')
    .leftJoin('transactions as t', 't.id', 'c.transaction_id')
    .where(owner)
    .select('c.id as task_id', 'c.transaction_id', 'c.context_id')
    .select(
      db.raw(
        `CASE WHEN t.id IS NOT NULL THEN t.status::text WHEN c.status = 'choosing' AND json_array_length(c.candidates) = 0 THEN 'open' ELSE c.status::text END AS phase`,
      ),
    )
    .select(db.raw('COALESCE(t.updated_at, c.updated_at) AS updated_at'));
  const transactions = listQuery(db, { userId: filter.userId, space: filter.space, role: '' })
    .whereNotExists(db('a2a_tasks as c').where(owner).whereRaw('c.transaction_id = transactions.id').select(db.raw('1')))
    .select('id as task_id', 'id as transaction_id', 'context_id', db.raw('status::text AS phase'), 'updated_at');
  const query = db.from(db.raw('(? UNION ALL ?) AS tasks', [conversations, transactions]));
  if (filter.phases) query.whereIn('phase', [...filter.phases]);
  if (filter.contextId) query.where({ context_id: filter.contextId });
  if (filter.updatedSince) query.where('updated_at', '>=', filter.updatedSince);
  return query;
}

/** One way an id may name a task: a conversation of the caller's, a transaction by the buyer's client id, or by its own id. */
export interface FoundTask {
  via: 'conversation' | 'client_id' | 'id';
  task: A2ATaskRow | null;
  transaction: TransactionRow | null;
  /** The task row's newest messages, oldest first (its owner's to read: the engine decides). */
  messages: A2AMessageRow[];
}

/**
 * Every row `tasks/get` may need to name and show a task, in one statement (a read on the hot
 * path: one round trip instead of five): the caller's own conversations the id names (by their
 * id or the v0.1 client id they were started with), and the transactions it names by the buyer's
 * client task id or by their own id (one row each; a transaction named both ways is `client_id`).
 * The engine applies the rules of which one wins, a conversation first. Each comes with its task
 * row (a conversation's own; a transaction's row, purchase or the conversation that bought it:
 * `transaction_id` is unique) and that row's newest `historyMax` messages. Task rows and messages
 * come as JSON, whose timestamps are ISO strings; the transaction's columns keep their types.
 *
 * Its shape is chosen for PostgreSQL's work per read (docs/benchmark-history.md, "JSON-RPC task
 * read"): starting a plan costs about as much as running it here, so there are few nodes: no CTE,
 * no `NOT EXISTS` (the engine prefers a conversation anyway), the transaction's columns as plain
 * columns rather than a whole-row value taken apart again, one messages subquery over both
 * branches, run only for a task row, and the messages as an array in index order (newest first,
 * reversed below) rather than an aggregate that sorts.
 */
const findTaskStatement = `
  SELECT found.*,
         CASE WHEN found.found_task_id IS NULL THEN '[]'::jsonb
              ELSE to_jsonb(ARRAY(SELECT to_jsonb(m) FROM a2a_messages m WHERE m.task_id = found.found_task_id
                                   ORDER BY m.created_at DESC, m.sequence DESC LIMIT ?)) END AS found_messages
    FROM (
      SELECT 'conversation' AS found_via, to_jsonb(c) AS found_task, c.id AS found_task_id, t.*
        FROM a2a_tasks c LEFT JOIN transactions t ON t.id = c.transaction_id
       WHERE c.kind = 'conversation' AND c.owner_user_id = ?::uuid AND c.owner_type = ? AND (c.client_task_id = ? OR c.id = ?::uuid)
      UNION ALL
      SELECT CASE WHEN t.buyer_user_id = ?::uuid AND t.client_task_id = ? THEN 'client_id' ELSE 'id' END, to_jsonb(a), a.id, t.*
        FROM transactions t LEFT JOIN a2a_tasks a ON a.transaction_id = t.id
       WHERE t.id = ?::uuid OR (t.buyer_user_id = ?::uuid AND t.client_task_id = ?)
    ) found`;

export async function findTask(db: Knex, owner: { user_id: string; caller_type: string }, id: string, historyMax: number): Promise<FoundTask[]> {
  const uuid = isUuid(id) ? id.toLowerCase() : null;
  const rows = await prepared<Record<string, unknown>>(db, findTaskStatement, [
    historyMax,
    owner.user_id,
    owner.caller_type,
    id,
    uuid,
    owner.user_id,
    id,
    uuid,
    owner.user_id,
    id,
  ]);
  return rows.map(({ found_via: via, found_task: task, found_task_id: _taskId, found_messages: newestFirst, ...transaction }) => ({
    via: via as FoundTask['via'],
    task: (task as A2ATaskRow | null) ?? null,
    transaction: transaction.id ? (transaction as unknown as TransactionRow) : null,
    messages: (newestFirst as A2AMessageRow[]).reverse(),
  }));
}
