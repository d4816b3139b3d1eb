import { type NeutralPart, milestonesOf } from '../src/domain/a2a.ts';
import type { A2ATask } from '../src/engine/a2a/index.ts';
import { limits } from '../src/limits.ts';
import type { TransactionView } from '../src/schemas/transactions.ts';
import { type Generation, type OpenPhase, type TaskName, conversationState, dataPart, messageOf, stateMessage, taskOf, textPart } from './shapes.ts';

/**
 * Engine tasks (engine/a2a) -> A2A Task shapes, beside shapes.ts, which renders transactions:
 * the names a task answers to, its history, and a conversation before its pick.
 */

/**
 * The id a task is shown with: the one the caller used (a conversation's or transaction's id, or a
 * v0.1 client id), else the v0.1 client id it was started with, else its own id.
 */
export function nameFor(task: A2ATask, requestedId?: string): TaskName {
  const own = [task.conversation?.id, task.transaction?.id].filter((id): id is string => id !== undefined);
  const asked = requestedId ?? task.clientTaskId ?? undefined;
  const known = asked === undefined ? undefined : own.find((id) => id === asked.toLowerCase());
  const named = asked === undefined ? { taskId: task.id } : known ? { taskId: known } : { taskId: asked, clientTaskId: asked };
  return {
    ...named,
    ...(task.clientContextId !== null ? { contextId: task.clientContextId } : {}),
    ...(task.conversation ? { conversationId: task.conversation.id } : {}),
  };
}

const partsOf = (parts: NeutralPart[], generation: Generation) =>
  parts.map((part) => (part.kind === 'text' ? textPart(part.text, generation) : dataPart(part.data, generation)));

/** A task's history in one answer, and how many older messages the byte bound left out. */
export interface History {
  messages: unknown[];
  cut: number;
}

/**
 * The task's messages, oldest first: what the buyer sent and the conversation's answers (stored),
 * merged with the states its transaction reached (derived from the transaction, which keeps its
 * timestamps for good). A stored message goes first on a tie: a buyer's message precedes what it
 * caused. `historyLength` keeps the newest ones; absent, all up to limits.a2aHistoryLengthMax.
 * The newest are kept up to `bytesMax` of JSON; the older ones beyond are cut and counted, so one
 * answer stays bounded however large the messages were.
 */
export function historyOf(
  task: A2ATask,
  view: TransactionView | null,
  generation: Generation,
  name: TaskName,
  historyLength?: number | null,
  bytesMax: number = limits.a2aHistoryAnswerBytesMax,
): History {
  const wanted = Math.min(historyLength ?? limits.a2aHistoryLengthMax, limits.a2aHistoryLengthMax);
  if (wanted === 0) return { messages: [], cut: 0 };
  const contextId = name.contextId ?? task.contextId;
  const entries = [
    ...task.messages.map((message, index) => ({
      at: Date.parse(message.at),
      order: index,
      render: () => messageOf({ ...message, parts: partsOf(message.parts, generation) }, generation, name, contextId),
    })),
    ...(view ? milestonesOf(view) : []).map((milestone, index) => ({
      at: Date.parse(milestone.at),
      order: task.messages.length + index,
      render: () => stateMessage(view!.id, milestone.status, generation, name, contextId),
    })),
  ];
  entries.sort((left, right) => left.at - right.at || left.order - right.order);
  const newest = entries.slice(-wanted).reverse();
  const kept: unknown[] = [];
  let bytes = 0;
  for (const entry of newest) {
    const message = entry.render();
    bytes += Buffer.byteLength(JSON.stringify(message));
    if (bytes > bytesMax) break;
    kept.push(message);
  }
  return { messages: kept.reverse(), cut: newest.length - kept.length };
}

/** A conversation before its pick: input-required with the candidates, working when none matched (open), or canceled. */
function conversationTaskOf(task: A2ATask, generation: Generation, name: TaskName, history: History) {
  const conversation = task.conversation!;
  const phase = conversation.status as OpenPhase;
  const contextId = name.contextId ?? task.contextId;
  const state = conversationState(phase, generation);
  const message = conversation.statusMessage
    ? messageOf({ ...conversation.statusMessage, parts: partsOf(conversation.statusMessage.parts, generation) }, generation, name, contextId)
    : undefined;
  const marketplace = {
    conversation_id: conversation.id,
    demand_id: conversation.demand_id,
    transaction_id: null,
    status: phase,
    context_id: task.contextId,
    ...(name.clientTaskId ? { client_task_id: name.clientTaskId } : {}),
    ...(history.cut > 0 ? { history_cut: history.cut } : {}),
  };
  const base = {
    id: name.taskId,
    status: { state, ...(message ? { message } : {}), timestamp: conversation.updated_at },
    artifacts: [],
    history: history.messages,
    metadata: { marketplace },
  };
  if (generation === 'v0.1') return { ...base, sessionId: contextId };
  if (generation === 'v1.0') return { ...base, contextId };
  if (generation === 'hybrid') return { kind: 'task', ...base, contextId, sessionId: contextId };
  return { kind: 'task', ...base, contextId };
}

export interface RenderOptions {
  historyLength?: number | null;
  artifacts?: boolean;
  /** The history's byte bound (ListTasks shares its own bound out between the tasks of a page). */
  historyBytesMax?: number;
}

/** The task as of `view` (a stream may hold a newer state of its transaction than the task read). */
export function renderTask(
  task: A2ATask,
  generation: Generation,
  name: TaskName,
  options: RenderOptions = {},
  view: TransactionView | null = task.transaction,
) {
  const history = historyOf(task, view, generation, name, options.historyLength, options.historyBytesMax);
  if (view) return taskOf(view, generation, name, { artifacts: options.artifacts, history: history.messages, historyCut: history.cut });
  return conversationTaskOf(task, generation, name, history);
}

/** The first event of a stream: the task, wrapped as v1.0 wraps stream results. */
export function renderTaskEvent(
  task: A2ATask,
  generation: Generation,
  name: TaskName,
  options: RenderOptions = {},
  view: TransactionView | null = task.transaction,
) {
  const rendered = renderTask(task, generation, name, options, view);
  return generation === 'v1.0' ? { task: rendered } : rendered;
}
