/**
 * The A2A room: agent-to-agent conversations over the market. A conversation (an A2A task) carries
 * the messages, the matching picks and the one purchase it may make (buying.ts), in the words of
 * every A2A generation (wording.ts). It buys through the money room's door and searches through the
 * market's; rpc/ renders it for each protocol version. This file is the room's door and its engine.
 */
import type { Knex } from 'knex';
import { actionOf, pickOf } from '../../domain/a2a.ts';
import { isUuid } from '../../domain/ids.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { TransactionView } from '../../schemas/transactions.ts';
import {
  type A2AMessageRow,
  type A2ATaskRow,
  type TaskListRow,
  ensurePurchaseRow,
  findConversation,
  findTask,
  insertMessages,
  newestMessages,
  taskListQuery,
  taskRowsOfTransactions,
} from '../../store/a2a.ts';
import type { TransactionRow } from '../../store/transactions.ts';
import { canSee, partyOf, visibleScope } from '../access/index.ts';
import { decodeCursor, encodeCursor, isoTimestamp, uuidText, type EngineDependencies, type Principal } from '../common/index.ts';
import { transactionView, type Idempotency, fingerprintOf, type CreateTransactionCommand, type TransactionEngine } from '../money/index.ts';
import type { DemandEngine, InvokeEngine, MatchingEngine } from '../market/index.ts';
import { type BuyOutcome, createBuying } from './buying.ts';
import { type Selection, type StartInput, createConversations } from './conversations.ts';
import type { A2ATask, ConversationPhase, IncomingMessage, ListedTask, SendMode, StoredMessage, TaskListQuery } from './types.ts';

/**
 * The A2A gateway's use cases (docs/decisions/a2a.md, the "Conversations" sections): finding a
 * task by any name a client may use, conversations, purchases and follow-up messages, with the
 * messages every task keeps. rpc/ parses and renders; everything that reads or writes is here.
 */
export type { A2ATask, ConversationPhase, IncomingMessage, ListedTask, SendMode, StoredMessage, TaskListQuery } from './types.ts';

/** What a follow-up message asks, read from its data part (rpc/ parses those) or from its words (read here). */
export type Intent =
  { kind: 'words'; text: string } | { kind: 'buy'; selection: Selection } | { kind: 'action'; action: 'confirm' | 'dispute'; reason?: string };

export interface SendOutcome {
  task: A2ATask;
  failure?: BuyOutcome['failure'];
}

const finalStatuses = new Set(['settled', 'cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded']);

const storedOf = (row: A2AMessageRow): StoredMessage => ({
  messageId: row.message_id,
  role: row.role,
  parts: row.parts,
  at: new Date(row.created_at).toISOString(),
});

/** A choosing conversation without candidates is open: nothing matched, the demand waits for sellers. */
const phaseOf = (row: A2ATaskRow): ConversationPhase => (row.status === 'choosing' && (row.candidates ?? []).length === 0 ? 'open' : row.status!);

const isOwner = (principal: Principal, row: Pick<A2ATaskRow, 'owner_user_id' | 'owner_type'>) =>
  row.owner_user_id === principal.user_id && row.owner_type === principal.caller_type;

export function createA2AEngine(
  dependencies: EngineDependencies,
  idempotency: Idempotency,
  parts: { matching: MatchingEngine; demands: DemandEngine; transactions: TransactionEngine; invoke: InvokeEngine },
) {
  const { db, now } = dependencies;
  const { transactions } = parts;
  const buying = createBuying(dependencies, transactions, parts.invoke);
  const conversations = createConversations(dependencies, idempotency, parts.matching, parts.demands, buying, transactions);

  /** A task from its rows: only its owner reads its stored messages (a seller sees the states). */
  function assemble(principal: Principal, row: A2ATaskRow | undefined, view: TransactionView | null, messages: A2AMessageRow[]): A2ATask {
    const owner = row !== undefined && isOwner(principal, row);
    const stored = owner ? messages.map(storedOf) : [];
    // Only the buyer sees (and may continue) a conversation; the seller sees the transaction.
    const conversation =
      owner && row.kind === 'conversation'
        ? {
            id: row.id,
            demand_id: row.demand_id!,
            status: phaseOf(row),
            candidates: row.candidates ?? [],
            updated_at: new Date(row.updated_at).toISOString(),
            statusMessage: stored.findLast((message) => message.role === 'agent') ?? null,
          }
        : null;
    return {
      id: conversation?.id ?? view!.id,
      contextId: row?.context_id ?? view!.context_id,
      clientContextId: row?.client_context_id ?? null,
      clientTaskId: row?.client_task_id ?? null,
      conversation,
      transaction: view,
      messages: stored,
    };
  }

  async function withRow(principal: Principal, row: A2ATaskRow | undefined, view: TransactionView | null): Promise<A2ATask> {
    const messages = row && isOwner(principal, row) ? ((await newestMessages(db, [row.id], limits.a2aHistoryLengthMax)).get(row.id) ?? []) : [];
    return assemble(principal, row, view, messages);
  }

  /**
   * By a conversation's id or v0.1 client id, or a transaction's id or v0.1 client id; 4040
   * otherwise. One query (store/a2a.ts findTask); the rules of who sees what are applied here.
   */
  async function find(principal: Principal, id: string): Promise<A2ATask> {
    const found = await findTask(db, principal, id, limits.a2aHistoryLengthMax);
    const conversation = found.find((entry) => entry.via === 'conversation');
    if (conversation) {
      const view = conversation.transaction ? transactionView(partyOf(principal, conversation.transaction).row) : null;
      return assemble(principal, conversation.task!, view, conversation.messages);
    }
    // A client task id names a task only among the buyer's own, and only one the caller may see.
    const chosen = found.find((entry) => entry.via === 'client_id' && canSee(principal, entry.transaction!)) ?? found.find((entry) => entry.via === 'id');
    const { row } = partyOf(principal, chosen?.transaction ?? undefined);
    return assemble(principal, chosen!.task ?? undefined, transactionView(row), chosen!.messages);
  }

  async function findIfAny(principal: Principal, id: string): Promise<A2ATask | null> {
    return find(principal, id).catch((error: unknown) => {
      if (error instanceof AppError && error.errorName === 'not_found') return null;
      throw error;
    });
  }

  /**
   * ListTasks: the caller's tasks (conversations and transactions, each once; store/a2a.ts
   * taskListQuery) newest status change first, keyset-paged on (that time, id), with each task's
   * transaction, context as sent and newest messages read in three more queries for the page.
   */
  async function list(principal: Principal, query: TaskListQuery) {
    const filter = { ...visibleScope(principal), phases: query.phases, contextId: query.context_id, updatedSince: query.updated_since };
    const [counted] = await taskListQuery(db, filter).count<{ count: string }[]>('* as count');
    const page = taskListQuery(db, filter)
      .select('*')
      .orderBy([
        { column: 'updated_at', order: 'desc' },
        { column: 'task_id', order: 'desc' },
      ])
      .limit(query.page_size + 1);
    if (query.cursor) {
      const [at, id] = decodeCursor(query.cursor, [isoTimestamp, uuidText]);
      page.whereRaw('(updated_at, task_id) < (?::timestamptz, ?::uuid)', [at!, id!]);
    }
    const rows = (await page) as TaskListRow[];
    const listed = rows.slice(0, query.page_size);
    const last = listed.at(-1);
    return {
      // A page reads at most a2aListHistoryMessagesMax stored messages, shared out between its tasks.
      items: await tasksOfRows(
        principal,
        listed,
        Math.min(
          query.history_length ?? limits.a2aHistoryLengthMax,
          limits.a2aHistoryLengthMax,
          Math.floor(limits.a2aListHistoryMessagesMax / Math.max(1, listed.length)),
        ),
      ),
      total: Number(counted?.count ?? 0),
      next_cursor: rows.length > query.page_size && last ? encodeCursor([new Date(last.updated_at).toISOString(), last.task_id]) : null,
    };
  }

  async function tasksOfRows(principal: Principal, listed: TaskListRow[], historyMax: number): Promise<ListedTask[]> {
    const transactionIds = listed.flatMap((row) => (row.transaction_id ? [row.transaction_id] : []));
    const views = new Map((await db<TransactionRow>('transactions').whereIn('id', transactionIds)).map((row) => [row.id, transactionView(row)]));
    const taskRows = await db<A2ATaskRow>('a2a_tasks')
      .whereIn(
        'id',
        listed.map((row) => row.task_id),
      )
      .orWhereIn('transaction_id', transactionIds);
    const byId = new Map(taskRows.map((row) => [row.id, row]));
    const byTransaction = new Map(taskRows.filter((row) => row.transaction_id).map((row) => [row.transaction_id!, row]));
    const owned = taskRows.filter((row) => isOwner(principal, row)).map((row) => row.id);
    const messages = await newestMessages(db, owned, historyMax);
    return listed.map((listedRow) => {
      const row = byId.get(listedRow.task_id) ?? (listedRow.transaction_id ? byTransaction.get(listedRow.transaction_id) : undefined);
      const view = listedRow.transaction_id ? views.get(listedRow.transaction_id)! : null;
      return { id: listedRow.task_id, task: assemble(principal, row, view, (row && messages.get(row.id)) ?? []) };
    });
  }

  /** A message that started nothing new is kept on its task, with the time it arrived. */
  async function keep(principal: Principal, task: A2ATask, message: IncomingMessage, arrivedAt: Date, trx: Knex = db) {
    if (!task.conversation) {
      await ensurePurchaseRow(trx, {
        id: task.id,
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        context_id: task.contextId,
        client_context_id: null,
        at: arrivedAt,
      });
    }
    await insertMessages(trx, [{ task_id: task.id, message_id: message.messageId, role: 'user', parts: message.parts, created_at: arrivedAt }]);
  }

  async function start(principal: Principal, input: StartInput): Promise<A2ATask> {
    return find(principal, await conversations.start(principal, input));
  }

  /**
   * A data part that buys, on no existing task. The message is kept with the context as sent,
   * stamped with the transaction's creation so the history starts with it.
   */
  async function purchase(
    principal: Principal,
    command: CreateTransactionCommand,
    input: { message: IncomingMessage; clientContextId: string | null; mode: SendMode },
  ): Promise<SendOutcome> {
    const { view, failure } = await buying.buy(principal, command, input.message.key, input.mode);
    await withTransaction(db, async ({ trx }) => {
      const at = new Date(view.created_at);
      await ensurePurchaseRow(trx, {
        id: view.id,
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        context_id: view.context_id,
        client_context_id: input.clientContextId,
        at,
      });
      await insertMessages(trx, [{ task_id: view.id, message_id: input.message.messageId, role: 'user', parts: input.message.parts, created_at: at }]);
    });
    const [row] = await taskRowsOfTransactions(db, [view.id]);
    return { task: await withRow(principal, row, view), failure };
  }

  /** A message on an existing task: a pick or other words in a conversation, an answer to a delivery, or a note. */
  async function followUp(principal: Principal, id: string, input: { message: IncomingMessage; intent: Intent; mode: SendMode }): Promise<SendOutcome> {
    const task = await find(principal, id);
    // Only the buyer continues a task; to anyone else it is not there to write to (-32001).
    if (!task.conversation && task.transaction?.buyer_user_id !== principal.user_id) throw notFound('task');
    const { intent, message } = input;
    const { conversation, transaction } = task;
    // A pick whose freeze failed (4020) is picked again, as a purchase is resent: the freeze is retried.
    if (conversation && (!transaction || transaction.status === 'pending_freeze')) {
      if (conversation.status === 'cancelled')
        throw new AppError('invalid_state_transition', 'this conversation was cancelled; send a new message to start another', {
          status: conversation.status,
          action: 'message',
        });
      const selection = intent.kind === 'buy' ? intent.selection : intent.kind === 'words' ? selectionOf(intent.text, conversation.candidates) : null;
      if (selection) {
        const { failure } = await conversations.pick(principal, (await findConversation(db, principal, task.id))!, selection, message, input.mode);
        return { task: await find(principal, task.id), failure };
      }
      if (!transaction) return { task: await converse(principal, task, intent, message) };
    }
    return { task: await answerDelivery(principal, task, intent, message) };
  }

  /** Words that pick nothing, before a pick: they reword the demand; an action has nothing to act on yet. */
  async function converse(principal: Principal, task: A2ATask, intent: Intent, message: IncomingMessage): Promise<A2ATask> {
    if (intent.kind !== 'words') {
      throw new AppError('invalid_state_transition', 'nothing has been bought in this conversation yet: pick a candidate first', {
        status: 'choosing',
        action: intent.kind === 'action' ? intent.action : 'buy',
      });
    }
    await conversations.refine(principal, (await findConversation(db, principal, task.id))!, intent.text, message);
    return find(principal, task.id);
  }

  /** On a purchase: confirm or dispute (in words or a data part); other words are kept as a note while the task is open. */
  async function answerDelivery(principal: Principal, task: A2ATask, intent: Intent, message: IncomingMessage): Promise<A2ATask> {
    const view = task.transaction!;
    // An ended task takes no message, a purchase part included: the state's refusal comes first.
    if (intent.kind === 'buy' && finalStatuses.has(view.status)) {
      throw new AppError('invalid_state_transition', `the task is ${view.status} and takes no more messages`, { status: view.status, action: 'buy' });
    }
    if (intent.kind === 'buy') {
      throw new AppError('validation_error', 'request failed validation', {
        errors: [{ path: 'params.message.parts', message: 'this task has bought already; send {action: "confirm" | "dispute"} or words once it is delivered' }],
      });
    }
    const arrivedAt = now();
    const action = intent.kind === 'action' ? intent : actionOf(intent.text);
    if (action) {
      const extra = action.action === 'dispute' && action.reason ? { reason: action.reason } : {};
      const request = { key: message.key, operation: `RPC ${action.action}`, fingerprint: fingerprintOf({ transaction_id: view.id, ...action }) };
      await transactions.act(principal, view.id, action.action, extra, request);
    } else if (finalStatuses.has(view.status)) {
      throw new AppError('invalid_state_transition', `the task is ${view.status} and takes no more messages`, { status: view.status, action: 'message' });
    }
    await keep(principal, task, message, arrivedAt);
    return find(principal, task.id);
  }

  /** A conversation before a pick is cancelled with its demand; a purchase is cancelled as a transaction. */
  async function cancel(principal: Principal, id: string): Promise<A2ATask> {
    const task = await find(principal, id);
    if (task.conversation && !task.transaction) {
      await conversations.cancel((await findConversation(db, principal, task.id))!);
    } else {
      await transactions.act(principal, task.transaction!.id, 'cancel', {}, null);
    }
    return find(principal, task.id);
  }

  return { find, findIfAny, list, start, purchase, followUp, cancel };
}

/** Words that pick a candidate: its number, its capability id, or a prefix of one candidate's id. */
function selectionOf(text: string, candidates: { number: number; capability_id: string }[]): Selection | null {
  const chosen = pickOf(text);
  if (!chosen) return null;
  if ('number' in chosen) {
    const candidate = candidates.find((entry) => entry.number === chosen.number);
    if (candidate) return { capability_id: candidate.capability_id };
    const range = candidates.length === 0 ? 'there are no candidates yet: describe what you need in other words' : `choose 1 to ${candidates.length}`;
    throw new AppError('validation_error', 'request failed validation', {
      errors: [{ path: 'params.message.parts', message: `there is no candidate ${chosen.number}; ${range}` }],
    });
  }
  if (isUuid(chosen.capabilityId)) return { capability_id: chosen.capabilityId };
  const matches = candidates.filter((entry) => entry.capability_id.startsWith(chosen.capabilityId));
  return matches.length === 1 ? { capability_id: matches[0]!.capability_id } : null;
}

export type A2AEngine = ReturnType<typeof createA2AEngine>;
