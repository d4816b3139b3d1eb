import { type JSONRPCID, JSONRPCServer } from 'json-rpc-2.0';
import type { A2ATask } from '../src/engine/a2a/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { AppError, errorBody, toAppError } from '../src/errors.ts';
import type { RpcContext } from './context.ts';
import { DecoratedError, RpcError, asNotCancelable, errorResponse, rpcCodes, toRpcErrorIn, unsupportedOperation } from './errors.ts';
import * as schemas from './params.ts';
import { parse } from './params.ts';
import { sendMessage, type SendRequest } from './purchase.ts';
import { type Generation, hasEnded } from './shapes.ts';
import { listTasks } from './list-tasks.ts';
import { ensureInlineRoom, type PushConfigGiven, pushMethods, registerInline } from './push.ts';
import { StreamStart } from './task-stream.ts';
import { nameFor, renderTask } from './tasks.ts';

export const streamingMethods: ReadonlySet<string> = new Set([
  'tasks/sendSubscribe',
  'tasks/resubscribe',
  'message/stream',
  'SendStreamingMessage',
  'SubscribeToTask',
]);

const extendedCardMethods = ['agent/getAuthenticatedExtendedCard', 'GetExtendedAgentCard'];

type Method = (params: unknown, context: RpcContext) => Promise<unknown>;
type SendGeneration = SendRequest['generation'];

/**
 * A send, and how it wants its answer: blocking (v0.1 always; v0.3 unless `blocking: false`; v1.0
 * unless `returnImmediately: true`) waits for an instant invoke's outcome; a stream never waits.
 * A push config inside it is stored on the task the send made or continued (validated before).
 */
async function send(engine: Engine, params: unknown, context: RpcContext, generation: SendGeneration, streaming: boolean) {
  if (generation === 'v0.1') {
    const input = parse(schemas.sendV01, params);
    const mode = { wait: !streaming };
    await ensureInlineRoom(engine, context.principal, input.pushNotification);
    const outcome = await sendMessage(engine, context.principal, {
      generation,
      message: input.message,
      clientTaskId: input.id,
      sessionId: input.sessionId,
      mode,
    });
    await registerPush(engine, context, generation, outcome.name.taskId, input.pushNotification);
    return { ...outcome, historyLength: input.historyLength };
  }
  const input = generation === 'v0.3' ? parse(schemas.sendV03, params) : parse(schemas.sendV10, params);
  const configuration = (input.configuration ?? {}) as {
    pushNotificationConfig?: PushConfigGiven | null;
    taskPushNotificationConfig?: PushConfigGiven | null;
    blocking?: boolean | null;
    returnImmediately?: boolean | null;
    historyLength?: number | null;
  };
  const blocking = generation === 'v0.3' ? configuration.blocking !== false : configuration.returnImmediately !== true;
  await ensureInlineRoom(engine, context.principal, configuration.taskPushNotificationConfig ?? configuration.pushNotificationConfig);
  const outcome = await sendMessage(engine, context.principal, { generation, message: input.message, mode: { wait: blocking && !streaming } });
  await registerPush(engine, context, generation, outcome.name.taskId, configuration.taskPushNotificationConfig ?? configuration.pushNotificationConfig);
  return { ...outcome, historyLength: configuration.historyLength };
}

async function registerPush(engine: Engine, context: RpcContext, generation: SendGeneration, taskName: string, push: PushConfigGiven | null | undefined) {
  if (push) await registerInline(engine, context.principal, generation, taskName, push);
}

/** The task a caller names (a conversation's or transaction's id, or a v0.1 client id), as the caller may see it. */
async function lookUp(engine: Engine, params: unknown, context: RpcContext) {
  const { id, historyLength } = parse(schemas.taskQuery, params);
  const task = await engine.a2a.find(context.principal, id);
  return { task, name: nameFor(task, id), historyLength };
}

/** A send by a key whose owner set an agent budget answers what is left of it, in metadata.marketplace.agent_budget. */
async function withBudgetLeft<T>(engine: Engine, context: RpcContext, rendered: T): Promise<T> {
  const budget = await engine.agentBudgets.left(context.principal);
  const marketplace = (rendered as { metadata?: { marketplace?: Record<string, unknown> } }).metadata?.marketplace;
  if (budget && marketplace) marketplace.agent_budget = budget;
  return rendered;
}

/** Whether a task is in one of A2A's terminal states: its transaction's, or before a pick its conversation's. */
const taskHasEnded = (task: A2ATask) => hasEnded(task.transaction?.status ?? task.conversation?.status ?? '');

/**
 * A v1.0 send refused by a task's state (4090) whose task has ended, read again after the
 * refusal: UnsupportedOperationError (-32004, specification 3.1.1), still carrying the 4090
 * details. Decided on the task itself, as SubscribeToTask decides, not on the refusal's words;
 * a 4090 of a task that has not ended (confirm before delivery) stays -32190.
 */
async function asEndedTaskRefusal(engine: Engine, context: RpcContext, params: unknown, error: unknown): Promise<unknown> {
  if (!(error instanceof AppError) || error.errorName !== 'invalid_state_transition') return error;
  const taskId = (params as { message?: { taskId?: unknown } } | null)?.message?.taskId;
  if (typeof taskId !== 'string' || taskId === '') return error;
  const task = await engine.a2a.find(context.principal, taskId).catch(() => null);
  if (!task || !taskHasEnded(task)) return error;
  return new RpcError(rpcCodes.unsupportedOperation, error.detail ?? 'the task has ended', errorBody(error) as unknown as Record<string, unknown>);
}

/** A send; in v1.0 a message to an ended task is refused as asEndedTaskRefusal says. */
async function sendIn(engine: Engine, params: unknown, context: RpcContext, generation: SendGeneration, streaming: boolean) {
  if (generation !== 'v1.0') return send(engine, params, context, generation, streaming);
  try {
    return await send(engine, params, context, generation, streaming);
  } catch (error) {
    throw await asEndedTaskRefusal(engine, context, params, error);
  }
}

function sendMethods(engine: Engine, generation: SendGeneration): [Method, Method] {
  const plain: Method = async (params, context) => {
    const { task, name, historyLength } = await sendIn(engine, params, context, generation, false);
    const rendered = await withBudgetLeft(engine, context, renderTask(task, generation, name, { historyLength }));
    return generation === 'v1.0' ? { task: rendered } : rendered;
  };
  const streaming: Method = async (params, context) => {
    const { task, name, historyLength } = await sendIn(engine, params, context, generation, true);
    // The first event carries what is left of the key's budget, as the answer of a plain send does.
    return new StreamStart(name, generation, task, { historyLength }, await engine.agentBudgets.left(context.principal));
  };
  return [plain, streaming];
}

/** get, cancel and subscribe; `fixed` is the generation of a v1.0 name, else the header decides. */
function taskMethods(engine: Engine, fixed?: Generation): { get: Method; cancel: Method; subscribe: Method } {
  return {
    get: async (params, context) => {
      const { task, name, historyLength } = await lookUp(engine, params, context);
      return renderTask(task, fixed ?? context.headerGeneration, name, { historyLength });
    },
    cancel: async (params, context) => {
      const { id, historyLength } = parse(schemas.taskQuery, params);
      const task = await engine.a2a.cancel(context.principal, id).catch((error: unknown) => {
        throw asNotCancelable(error);
      });
      return renderTask(task, fixed ?? context.headerGeneration, nameFor(task, id), { historyLength });
    },
    subscribe: async (params, context) => {
      const { task, name, historyLength } = await lookUp(engine, params, context);
      // v1.0's SubscribeToTask (and tasks/resubscribe under A2A-Version: 1.0) refuses a task that
      // has ended (specification 3.1.6); GetTask reads it. The older generations' resubscribe
      // answers it with its one final event, as their clients expect.
      if ((fixed ?? context.headerGeneration) === 'v1.0' && taskHasEnded(task))
        throw unsupportedOperation(
          `the task has ended (${task.transaction?.status ?? task.conversation?.status}): there is nothing to subscribe to; GetTask reads it`,
        );
      return new StreamStart(name, fixed ?? context.headerGeneration, task, { historyLength });
    },
  };
}

/**
 * The method table of the three A2A generations (decisions section 9), all on the one engine.
 * Methods named by one generation answer in its shapes; the shared `tasks/get`, `tasks/cancel`
 * and `tasks/resubscribe` answer in the generation of the `A2A-Version` header (none: hybrid).
 * Streaming methods return a StreamStart that the transport turns into SSE or notifications.
 */
export function createMethods(engine: Engine): Record<string, Method> {
  const [v01Send, v01Stream] = sendMethods(engine, 'v0.1');
  const [v03Send, v03Stream] = sendMethods(engine, 'v0.3');
  const [v10Send, v10Stream] = sendMethods(engine, 'v1.0');
  const shared = taskMethods(engine);
  const v10 = taskMethods(engine, 'v1.0');
  const table: Record<string, Method> = {
    'tasks/send': v01Send,
    'tasks/sendSubscribe': v01Stream,
    'message/send': v03Send,
    'message/stream': v03Stream,
    'tasks/get': shared.get,
    'tasks/cancel': shared.cancel,
    'tasks/resubscribe': shared.subscribe,
    SendMessage: v10Send,
    SendStreamingMessage: v10Stream,
    GetTask: v10.get,
    CancelTask: v10.cancel,
    SubscribeToTask: v10.subscribe,
    ListTasks: (params, context) => listTasks(engine, params, context),
    'tasks/unsubscribe': async (params, context) => {
      const { subscription } = parse(schemas.unsubscribe, params);
      if (!context.unsubscribe) throw unsupportedOperation('tasks/unsubscribe exists only on the WebSocket transport');
      return { unsubscribed: context.unsubscribe(subscription) };
    },
  };
  Object.assign(table, pushMethods(engine));
  for (const name of extendedCardMethods)
    table[name] = async () => {
      throw unsupportedOperation('there is no authenticated extended agent card');
    };
  return table;
}

/**
 * The JSON-RPC server: the method table, with errors rendered by rpc/errors.ts. `methods` is the
 * same table for calling a method directly (rpc/dispatch.ts), and `errorOf` renders a failure as
 * the library does.
 */
export function createRpcServer(engine: Engine) {
  const server = new JSONRPCServer<RpcContext>({ errorListener: () => {} });
  const { log } = engine.dependencies;
  /** A failure as its JSON-RPC error, in v1.0's shape for a v1.0 call (rpc/errors.ts inV10Shape). */
  const errorOf = (id: JSONRPCID, error: unknown, v10 = false) => errorResponse(id, toRpcErrorIn(v10, error, log));
  server.mapErrorToJSONRPCErrorResponse = (id, error) => errorOf(id, error);
  // An unexpected error is logged here, where the exchange's own logger is known, and goes on as
  // the generic 5000 that mapErrorToJSONRPCErrorResponse renders.
  const logged =
    (method: Method): Method =>
    async (params, context) => {
      try {
        return await method(params, context);
      } catch (error) {
        if (error instanceof AppError || error instanceof RpcError || error instanceof DecoratedError) throw error;
        throw toAppError(error, (message, cause) => (context.log ?? log).error(`json-rpc: ${message}`, { error: cause }));
      }
    };
  const methods = new Map(Object.entries(createMethods(engine)).map(([name, method]) => [name, logged(method)]));
  for (const [name, method] of methods) server.addMethod(name, method);
  return { library: server, methods: methods as ReadonlyMap<string, Method>, errorOf };
}

export type RpcServer = ReturnType<typeof createRpcServer>;
