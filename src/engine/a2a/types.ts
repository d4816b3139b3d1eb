import type { NeutralPart } from '../../domain/a2a.ts';
import type { TransactionView } from '../../schemas/transactions.ts';
import type { Candidate } from '../../store/a2a.ts';

/**
 * What the engine's A2A module answers with: tasks and messages in no generation's spelling.
 * rpc/ renders them in the shapes of the generation a client speaks.
 */

/** A message as the gateway received it: its id as sent, the idempotency key made from it, its parts. */
export interface IncomingMessage {
  messageId: string;
  key: string;
  parts: NeutralPart[];
}

/** A stored history entry: a buyer's message or an agent message of a conversation. */
export interface StoredMessage {
  messageId: string;
  role: 'user' | 'agent';
  parts: NeutralPart[];
  at: string;
}

/**
 * Where a conversation stands: `choosing` among its candidates, `open` when nothing matched (the
 * demand waits for sellers; stored as choosing with no candidates), `bought` once a pick bought,
 * `cancelled`.
 */
export type ConversationPhase = 'choosing' | 'open' | 'bought' | 'cancelled';

export interface ConversationState {
  id: string;
  demand_id: string;
  status: ConversationPhase;
  candidates: Candidate[];
  updated_at: string;
  /** The agent's latest message: the candidates offered, or why the conversation ended. */
  statusMessage: StoredMessage | null;
}

/**
 * One A2A task: a conversation (with its purchase once a pick bought), or a purchase task. Its
 * context is the stored uuid and, when the client sent one, the client's own string.
 */
export interface A2ATask {
  /** The conversation's id, or the transaction's id for a purchase task. */
  id: string;
  contextId: string;
  clientContextId: string | null;
  /** A v0.1 client's own id of a conversation (a purchase task's is the transaction's client_task_id). */
  clientTaskId: string | null;
  conversation: ConversationState | null;
  transaction: TransactionView | null;
  /** The newest stored messages, oldest first; only the task's owner (the buyer) reads them. */
  messages: StoredMessage[];
}

/** How a send wants its answer: at once (the task as created) or once an instant invoke is done. */
export interface SendMode {
  wait: boolean;
}

/** What ListTasks asks the engine (rpc/list-tasks.ts maps the protocol's filters to these). */
export interface TaskListQuery {
  /** Transaction statuses and conversation phases (`choosing`, `open`, `cancelled`); absent: all. */
  phases?: readonly string[];
  /** The stored context uuid. */
  context_id?: string;
  /** ISO 8601 with a zone: tasks whose status changed at or after it. */
  updated_since?: string;
  page_size: number;
  cursor?: string;
  /** The most messages of each task's history the page will show (fewer are read). */
  history_length?: number;
}

/** A listed task and the id it is listed as (a seller sees a conversation's purchase as the transaction). */
export interface ListedTask {
  id: string;
  task: A2ATask;
}
