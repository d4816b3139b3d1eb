import type { z } from 'zod';
import type { Principal } from '../src/engine/dependencies.ts';
import { fingerprintOf } from '../src/engine/idempotency.ts';
import type { Engine } from '../src/engine/index.ts';
import type { CreateTransactionCommand } from '../src/engine/transactions.ts';
import { AppError } from '../src/errors.ts';
import type { TransactionView } from '../src/schemas/transactions.ts';
import { validationError } from '../src/schemas/validation.ts';
import { DecoratedError, contentTypeNotSupported } from './errors.ts';
import { type MessageParams, actionPart, noteLengthMax, purchasePart } from './params.ts';
import { type TaskName, nameOf } from './shapes.ts';

/**
 * A message to the marketplace agent, translated into engine calls (no business logic here):
 *
 * - A message with a data part `{capability_id, demand_id?, booked_hours?, input?}` buys: the
 *   engine creates the transaction and the buyer's freeze follows at once. Text parts become the
 *   buyer's note; `contextId` (v0.1 `sessionId`) becomes the transaction's context_id.
 * - A message on an existing task (v0.2+: `message.taskId`; v0.1: the same task `id`) carrying a
 *   data part `{action: "confirm" | "dispute", reason?}` confirms or disputes the delivery.
 *
 * Idempotency key: v0.1 the client's task id; v0.2+ the message's `messageId` (A2A requires one,
 * and a client that retries a send resends the same message). Agents thus always send a key.
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
}

export interface SendOutcome {
  view: TransactionView;
  name: TaskName;
}

const partsPath = 'params.message.parts';

const invalid = (path: string, message: string) => new AppError('validation_error', 'request failed validation', { errors: [{ path, message }] });

function parseAt<T extends z.ZodType>(schema: T, value: unknown, path: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error, path);
  return result.data;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Text parts and data parts, whatever the generation's part spelling (`type`, `kind` or none). */
function classifyParts(parts: Record<string, unknown>[]) {
  const texts: string[] = [];
  const data: { value: Record<string, unknown>; path: string }[] = [];
  parts.forEach((part, index) => {
    const path = `${partsPath}.${index}`;
    const kind = part.kind ?? part.type;
    if (kind === 'text' || (kind === undefined && 'text' in part)) {
      if (typeof part.text !== 'string') throw invalid(`${path}.text`, 'must be a string');
      texts.push(part.text);
    } else if (kind === 'data' || (kind === undefined && 'data' in part)) {
      if (!isPlainObject(part.data)) throw invalid(`${path}.data`, 'must be an object');
      data.push({ value: part.data, path: `${path}.data` });
    } else if (kind === 'file' || 'file' in part || 'url' in part || 'raw' in part) {
      throw contentTypeNotSupported(path);
    } else {
      throw invalid(path, 'must be a text part or a data part');
    }
  });
  const note = texts.join('\n').trim();
  if (note.length > noteLengthMax) throw invalid(partsPath, `text parts may hold at most ${noteLengthMax} characters`);
  return { note: note || undefined, data };
}

export async function sendMessage(engine: Engine, principal: Principal, request: SendRequest): Promise<SendOutcome> {
  const { note, data } = classifyParts(request.message.parts);
  if (data.length !== 1) {
    throw invalid(partsPath, 'exactly one data part is required: {capability_id, ...} to buy, or {action} on a delivered task');
  }
  const part = data[0]!;
  const key = request.clientTaskId ?? request.message.messageId!;
  const isAction = 'action' in part.value;
  const existingTask = request.generation === 'v0.1' ? (isAction ? request.clientTaskId : undefined) : (request.message.taskId ?? undefined);
  if (existingTask !== undefined) return followUp(engine, principal, existingTask, parseAt(actionPart, part.value, part.path), key);
  if (isAction) throw invalid('params.message.taskId', 'an action is sent on an existing task: set message.taskId');
  const purchase = parseAt(purchasePart, part.value, part.path);
  const contextId = (request.generation === 'v0.1' ? request.sessionId : null) ?? request.message.contextId ?? undefined;
  const command: CreateTransactionCommand = {
    ...purchase,
    ...(contextId ? { context_id: contextId } : {}),
    ...(note ? { note } : {}),
    ...(request.clientTaskId ? { client_task_id: request.clientTaskId } : {}),
  };
  return buy(engine, principal, command, key, request.clientTaskId);
}

/** Translation only: the engine buys; a failed freeze is reported with the task it left behind. */
async function buy(engine: Engine, principal: Principal, command: CreateTransactionCommand, key: string, clientTaskId: string | undefined): Promise<SendOutcome> {
  const { view, failure } = await engine.transactions.purchase(principal, command, key);
  const name: TaskName = clientTaskId ? { taskId: clientTaskId, clientTaskId } : { taskId: view.id };
  if (failure) throw new DecoratedError(failure, { transaction_id: view.id, task_id: name.taskId, status: view.status });
  return { view, name };
}

async function followUp(engine: Engine, principal: Principal, taskId: string, action: z.output<typeof actionPart>, key: string): Promise<SendOutcome> {
  const { transactions } = engine;
  const { id: transactionId } = await transactions.findForCaller(principal, taskId);
  const extra = action.action === 'dispute' && action.reason ? { reason: action.reason } : {};
  const request = { key, operation: `RPC ${action.action}`, fingerprint: fingerprintOf({ transaction_id: transactionId, ...action }) };
  const outcome = await transactions.act(principal, transactionId, action.action, extra, request);
  const view = outcome.replayed ? await transactions.get(principal, transactionId) : outcome.data;
  return { view, name: nameOf(view, taskId) };
}
