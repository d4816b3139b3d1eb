import { JSONRPCServer } from 'json-rpc-2.0';
import type { Principal } from '../src/engine/dependencies.ts';
import type { Engine } from '../src/engine/index.ts';
import { AppError, toAppError } from '../src/errors.ts';
import type { Logger } from '../src/logger.ts';
import { DecoratedError, RpcError, asNotCancelable, errorResponse, pushNotificationsNotSupported, toRpcError, unsupportedOperation } from './errors.ts';
import * as schemas from './params.ts';
import { parse } from './params.ts';
import { sendMessage, type SendRequest } from './purchase.ts';
import { type Generation, nameOf, taskOf } from './shapes.ts';
import { listTasks } from './list-tasks.ts';
import { StreamStart } from './task-stream.ts';

/**
 * The method table of the three A2A generations (decisions section 9), all on the one engine.
 * Methods named by one generation answer in its shapes; the shared `tasks/get`, `tasks/cancel`
 * and `tasks/resubscribe` answer in the generation of the `A2A-Version` header (none: hybrid).
 * Streaming methods return a StreamStart that the transport turns into SSE or notifications.
 */
export interface RpcContext {
  principal: Principal;
  /** From the `A2A-Version` header. */
  headerGeneration: Generation;
  /** WebSocket only: ends one of this connection's subscriptions. */
  unsubscribe?: (subscription: string) => boolean;
  /** The logger for this exchange (over HTTP it carries the request id). */
  log?: Logger;
}

export const streamingMethods: ReadonlySet<string> = new Set([
  'tasks/sendSubscribe', 'tasks/resubscribe', 'message/stream', 'SendStreamingMessage', 'SubscribeToTask',
]);

const pushNotificationMethods = [
  'tasks/pushNotification/set', 'tasks/pushNotification/get',
  'tasks/pushNotificationConfig/set', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list', 'tasks/pushNotificationConfig/delete',
  'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig',
];

const extendedCardMethods = ['agent/getAuthenticatedExtendedCard', 'GetExtendedAgentCard'];

type Method = (params: unknown, context: RpcContext) => Promise<unknown>;
type SendGeneration = SendRequest['generation'];

async function send(engine: Engine, params: unknown, context: RpcContext, generation: SendGeneration) {
  if (generation === 'v0.1') {
    const input = parse(schemas.sendV01, params);
    if (input.pushNotification != null) throw pushNotificationsNotSupported();
    return sendMessage(engine, context.principal, { generation, message: input.message, clientTaskId: input.id, sessionId: input.sessionId });
  }
  const input = generation === 'v0.3' ? parse(schemas.sendV03, params) : parse(schemas.sendV10, params);
  const configuration = (input.configuration ?? {}) as { pushNotificationConfig?: unknown; taskPushNotificationConfig?: unknown };
  if (configuration.pushNotificationConfig != null || configuration.taskPushNotificationConfig != null) throw pushNotificationsNotSupported();
  return sendMessage(engine, context.principal, { generation, message: input.message });
}

/** The task a caller names (its v0.1 client id or the transaction id), as the caller may see it. */
async function lookUp(engine: Engine, params: unknown, context: RpcContext) {
  const { id } = parse(schemas.taskQuery, params);
  return { id, view: await engine.transactions.findForCaller(context.principal, id) };
}

function sendMethods(engine: Engine, generation: SendGeneration): [Method, Method] {
  const plain: Method = async (params, context) => {
    const { view, name } = await send(engine, params, context, generation);
    const task = taskOf(view, generation, name);
    return generation === 'v1.0' ? { task } : task;
  };
  const streaming: Method = async (params, context) => {
    const { view, name } = await send(engine, params, context, generation);
    return new StreamStart(view.id, name, generation, view);
  };
  return [plain, streaming];
}

/** get, cancel and subscribe; `fixed` is the generation of a v1.0 name, else the header decides. */
function taskMethods(engine: Engine, fixed?: Generation): { get: Method; cancel: Method; subscribe: Method } {
  const { transactions } = engine;
  return {
    get: async (params, context) => {
      const { id, view } = await lookUp(engine, params, context);
      return taskOf(view, fixed ?? context.headerGeneration, nameOf(view, id));
    },
    cancel: async (params, context) => {
      const { id, view: current } = await lookUp(engine, params, context);
      const { data: view } = await transactions.act(context.principal, current.id, 'cancel', {}, null).catch((error: unknown) => {
        throw asNotCancelable(error);
      });
      return taskOf(view, fixed ?? context.headerGeneration, nameOf(view, id));
    },
    subscribe: async (params, context) => {
      const { id, view } = await lookUp(engine, params, context);
      return new StreamStart(view.id, nameOf(view, id), fixed ?? context.headerGeneration, view);
    },
  };
}

export function createMethods(engine: Engine): Record<string, Method> {
  const [v01Send, v01Stream] = sendMethods(engine, 'v0.1');
  const [v03Send, v03Stream] = sendMethods(engine, 'v0.3');
  const [v10Send, v10Stream] = sendMethods(engine, 'v1.0');
  const shared = taskMethods(engine);
  const v10 = taskMethods(engine, 'v1.0');
  const table: Record<string, Method> = {
    'tasks/send': v01Send, 'tasks/sendSubscribe': v01Stream,
    'message/send': v03Send, 'message/stream': v03Stream,
    'tasks/get': shared.get, 'tasks/cancel': shared.cancel, 'tasks/resubscribe': shared.subscribe,
    SendMessage: v10Send, SendStreamingMessage: v10Stream,
    GetTask: v10.get, CancelTask: v10.cancel, SubscribeToTask: v10.subscribe,
    ListTasks: (params, context) => listTasks(engine, params, context),
    'tasks/unsubscribe': async (params, context) => {
      const { subscription } = parse(schemas.unsubscribe, params);
      if (!context.unsubscribe) throw unsupportedOperation('tasks/unsubscribe exists only on the WebSocket transport');
      return { unsubscribed: context.unsubscribe(subscription) };
    },
  };
  for (const name of pushNotificationMethods) table[name] = async () => { throw pushNotificationsNotSupported(); };
  for (const name of extendedCardMethods) table[name] = async () => { throw unsupportedOperation('there is no authenticated extended agent card'); };
  return table;
}

/** The JSON-RPC server: the method table, with errors rendered by rpc/errors.ts. */
export function createRpcServer(engine: Engine) {
  const server = new JSONRPCServer<RpcContext>({ errorListener: () => {} });
  const { log } = engine.dependencies;
  server.mapErrorToJSONRPCErrorResponse = (id, error) => errorResponse(id, toRpcError(error, log));
  // An unexpected error is logged here, where the exchange's own logger is known, and goes on as
  // the generic 5000 that mapErrorToJSONRPCErrorResponse renders.
  const logged = (method: Method): Method => async (params, context) => {
    try {
      return await method(params, context);
    } catch (error) {
      if (error instanceof AppError || error instanceof RpcError || error instanceof DecoratedError) throw error;
      throw toAppError(error, (message, cause) => (context.log ?? log).error(`json-rpc: ${message}`, { error: cause }));
    }
  };
  for (const [name, method] of Object.entries(createMethods(engine))) server.addMethod(name, logged(method));
  return server;
}
