import type { Knex } from 'knex';
import type { NeutralPart } from '../domain/a2a.ts';
import { isUuid } from '../domain/ids.ts';

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

/** Stored once: a retried message (same task, role and id) is ignored. */
export async function insertMessages(trx: Knex, messages: NewMessage[]) {
  if (messages.length === 0) return;
  await trx('a2a_messages')
    .insert(messages.map((message) => ({ ...message, parts: JSON.stringify(message.parts) })))
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
export async function ensurePurchaseRow(trx: Knex, row: Pick<A2ATaskRow, 'id' | 'owner_user_id' | 'owner_type' | 'context_id' | 'client_context_id'> & { at: Date }) {
  const { at, ...fields } = row;
  await trx('a2a_tasks')
    .insert({ ...fields, kind: 'purchase', transaction_id: row.id, status: null, created_at: at, updated_at: at })
    .onConflict(['id'])
    .ignore();
}
