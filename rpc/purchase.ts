import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { type NeutralPart, contextIdOf, messageKeyOf, v01MessageIdOf } from '../src/domain/a2a.ts';
import type { A2ATask, IncomingMessage, Intent, SendMode } from '../src/engine/a2a/index.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import type { CreateTransactionCommand } from '../src/engine/money/index.ts';
import { AppError } from '../src/errors.ts';
import { validationError } from '../src/schemas/validation.ts';
import { DecoratedError, contentTypeNotSupported } from './errors.ts';
import { type MessageParams, actionPart, noteLengthMax, purchasePart } from './params.ts';
import type { TaskName } from './shapes.ts';
import { nameFor } from './tasks.ts';
import { withNullsLeftOut } from '../src/schemas/null-as-absent.ts';

/**
 * A message to the marketplace agent, translated into engine calls (engine/a2a decides; no
 * business logic here):
 *
 * - A message with a data part `{capability_id, demand_id?, booked_hours?, input?, max_price?}` buys: the
 *   engine creates the transaction and the buyer's freeze follows at once (an instant per_query
 *   capability is invoked instead). Text parts become the buyer's note; `contextId` (v0.1
 *   `sessionId`) becomes the transaction's context, echoed as sent.
 * - A message with only text parts starts a conversation: a demand, answered with candidates
 *   (a data part beside the text that names neither a capability nor an action rides along).
 * - A message on an existing task (v0.2+: `message.taskId`; v0.1: the same task `id`) picks or
 *   rewords in a conversation, or answers a delivery: a data part `{action: "confirm" |
 *   "dispute", reason?}` or the same in words.
 *
 * Idempotency key: v0.1 the client's task id (a follow-up: a hash of the task id and the message);
 * v0.2+ the message's `messageId` (A2A requires one, and a client that retries a send resends the
 * same message), hashed when it is no valid key. Agents thus always send a key.
 *
 * If the freeze fails (insufficient balance, ...), the error is answered with the created
 * transaction named in `error.data` (`transaction_id`, `task_id`, `status: "pending_freeze"`).
 * No money moved. The buyer may top up and send the same message again (same key: the create is
 * replayed and the freeze retried on the same transaction), or cancel the task.
 */
export interface SendRequest {
  generation: 'v0.1' | 'v0.3' | 'v1.0';
  message: MessageParams;
  /** v0.1: the task id the client chose. */
  clientTaskId?: string;
  /** v0.1 top-level sessionId. */
  sessionId?: string | null;
  /** Whether an instant invoke is waited for (a blocking send) or answered once held. */
  mode: SendMode;
}

export interface SendOutcome {
  task: A2ATask;
  name: TaskName;
}

const partsPath = 'params.message.parts';

const invalid = (path: string, message: string) => new AppError('validation_error', 'request failed validation', { errors: [{ path, message }] });

function parseAt<T extends z.ZodType>(schema: T, value: unknown, path: string): z.output<T> {
  // A data part's null for an optional field is the field left out, as in a REST body.
  const result = schema.safeParse(withNullsLeftOut(schema, value));
  if (!result.success) throw validationError(result.error, path, value);
  return result.data;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Text parts and data parts, whatever the generation's part spelling (`type`, `kind` or none). */
function classifyParts(parts: Record<string, unknown>[]) {
  const texts: string[] = [];
  const neutral: NeutralPart[] = [];
  const data: { value: Record<string, unknown>; path: string }[] = [];
  parts.forEach((part, index) => {
    const path = `${partsPath}.${index}`;
    const kind = part.kind ?? part.type;
    if (kind === 'text' || (kind === undefined && 'text' in part)) {
      if (typeof part.text !== 'string') throw invalid(`${path}.text`, 'must be a string');
      texts.push(part.text);
      neutral.push({ kind: 'text', text: part.text });
    } else if (kind === 'data' || (kind === undefined && 'data' in part)) {
      if (!isPlainObject(part.data)) throw invalid(`${path}.data`, 'must be an object');
      data.push({ value: part.data, path: `${path}.data` });
      neutral.push({ kind: 'data', data: part.data });
    } else if (kind === 'file' || 'file' in part || 'url' in part || 'raw' in part) {
      throw contentTypeNotSupported(path);
    } else {
      throw invalid(path, 'must be a text part or a data part');
    }
  });
  const note = texts.join('\n').trim();
  if (note.length > noteLengthMax) throw invalid(partsPath, `text parts may hold at most ${noteLengthMax} characters`);
  return { note: note || undefined, data, parts: neutral };
}

export async function sendMessage(engine: Engine, principal: Principal, request: SendRequest): Promise<SendOutcome> {
  try {
    return await answerMessage(engine, principal, request);
  } catch (error) {
    throw withKeyNamed(error, request.generation);
  }
}

/**
 * Over A2A the idempotency key is the message's own id (v0.1: the client's task id), not the
 * Idempotency-Key header the engine's sentence names, which the client never sent: a reused one
 * is refused (4220) with a sentence that says what to change.
 */
function withKeyNamed(error: unknown, generation: SendRequest['generation']): unknown {
  if (!(error instanceof AppError) || error.errorName !== 'idempotency_key_reused') return error;
  const detail =
    generation === 'v0.1'
      ? 'this task id was already used with a different message: start a new task with an id of its own'
      : 'this messageId was already sent with a different message: give each new message a messageId of its own';
  return new AppError('idempotency_key_reused', detail);
}

async function answerMessage(engine: Engine, principal: Principal, request: SendRequest): Promise<SendOutcome> {
  const { note, data, parts } = classifyParts(request.message.parts);
  if (data.length > 1) throw invalid(partsPath, 'at most one data part: {capability_id, ...} to buy, or {action} on a delivered task');
  const part = commandOf(data[0], note);
  const existing = await existingTask(engine, principal, request, part);
  const message = messageOf(request, parts, existing !== undefined);
  if (existing !== undefined) {
    const intent: Intent = part ? intentOf(part) : { kind: 'words', text: note ?? '' };
    const { task, failure } = await engine.a2a.followUp(principal, existing, { message, intent, mode: request.mode });
    return named(task, existing, failure);
  }
  const clientContextId = (request.generation === 'v0.1' ? request.sessionId || null : null) ?? (request.message.contextId || null);
  const contextId = clientContextId === null ? undefined : contextIdOf(clientContextId);
  if (!part) {
    if (!note) throw invalid(partsPath, 'say what you need in a text part, or send a data part {capability_id, ...} to buy');
    const task = await engine.a2a.start(principal, {
      text: note,
      message,
      contextId: contextId ?? randomUUID(),
      clientContextId,
      clientTaskId: request.clientTaskId ?? null,
    });
    return named(task, request.clientTaskId);
  }
  if ('action' in part.value) throw invalid('params.message.taskId', 'an action is sent on an existing task: set message.taskId');
  const purchase = parseAt(purchasePart, part.value, part.path);
  const command: CreateTransactionCommand = {
    ...purchase,
    ...(contextId ? { context_id: contextId } : {}),
    ...(note ? { note } : {}),
    ...(request.clientTaskId ? { client_task_id: request.clientTaskId } : {}),
  };
  const { task, failure } = await engine.a2a.purchase(principal, command, { message, clientContextId, mode: request.mode });
  return named(task, request.clientTaskId, failure);
}

/**
 * The data part a message acts by: one naming a capability (to buy) or an action, or any data
 * part sent alone (so that a mistyped purchase is refused naming its fields). Beside words, a data
 * part naming neither is context for the words: the words are what the buyer needs, the data part
 * stays in the task's history.
 */
function commandOf(part: { value: Record<string, unknown>; path: string } | undefined, note: string | undefined) {
  if (!part) return undefined;
  return note === undefined || 'capability_id' in part.value || 'action' in part.value ? part : undefined;
}

/** A failed freeze is reported with the task it left behind (the transaction in pending_freeze). */
function named(task: A2ATask, requestedId: string | undefined, failure?: AppError): SendOutcome {
  const name = nameFor(task, requestedId);
  if (failure) throw new DecoratedError(failure, { transaction_id: task.transaction!.id, task_id: name.taskId, status: task.transaction!.status });
  return { task, name };
}

/**
 * The task a message continues, if any. v0.2+ names it (`message.taskId`). v0.1 resends its task
 * id with every message: it continues a task of the caller's with that id, except that a purchase
 * task's purchase resent under its id is the same purchase again (replayed under its key, as before).
 */
async function existingTask(engine: Engine, principal: Principal, request: SendRequest, part: { value: Record<string, unknown> } | undefined) {
  if (request.generation !== 'v0.1') return request.message.taskId || undefined;
  if (part && 'action' in part.value) return request.clientTaskId;
  const found = await engine.a2a.findIfAny(principal, request.clientTaskId!);
  if (!found) return undefined;
  const buys = part !== undefined && !('action' in part.value);
  return buys && !found.conversation ? undefined : request.clientTaskId;
}

/** The message as the engine keeps it: its id as sent (v0.1: made from the task id and content) and its key. */
function messageOf(request: SendRequest, parts: NeutralPart[], followUp: boolean): IncomingMessage {
  const sentId = request.message.messageId || undefined;
  if (request.generation !== 'v0.1') return { messageId: sentId!, key: messageKeyOf(sentId!), parts };
  const messageId = sentId ?? v01MessageIdOf(request.clientTaskId!, parts);
  return { messageId, key: followUp ? messageKeyOf(messageId) : request.clientTaskId!, parts };
}

function intentOf(part: { value: Record<string, unknown>; path: string }): Intent {
  if ('action' in part.value) return { kind: 'action', ...parseAt(actionPart, part.value, part.path) };
  const { capability_id, booked_hours, input, max_price } = parseAt(purchasePart, part.value, part.path);
  return {
    kind: 'buy',
    selection: { capability_id, ...(booked_hours ? { booked_hours } : {}), ...(input ? { input } : {}), ...(max_price === undefined ? {} : { max_price }) },
  };
}
