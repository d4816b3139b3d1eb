import type { JSONRPCErrorResponse, JSONRPCID } from 'json-rpc-2.0';
import { AppError, errorBody, toAppError } from '../src/errors.ts';
import type { Logger } from '../src/logger.ts';

/**
 * Every failure becomes one JSON-RPC error object. Marketplace errors keep the code the error
 * table gives them (src/errors.ts: 4040 -> -32001, 4090 -> -32002, 4020 -> -32120, ...) and carry
 * the REST envelope's `{code, message, data}` in `data`, so a client branches on the same numbers
 * over both transports. `message` is the human sentence; `data.message` the stable machine name.
 */
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export const rpcCodes = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotificationNotSupported: -32003,
  unsupportedOperation: -32004,
  contentTypeNotSupported: -32005,
} as const;

/** A protocol-level error of the A2A vocabulary that has no marketplace code. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const unsupportedOperation = (detail: string) => new RpcError(rpcCodes.unsupportedOperation, 'Unsupported operation', { detail });
export const pushNotificationsNotSupported = () =>
  new RpcError(rpcCodes.pushNotificationNotSupported, 'Push notifications are not supported', {
    detail: 'subscribe with a streaming method or over the WebSocket instead',
  });
export const contentTypeNotSupported = (path: string) =>
  new RpcError(rpcCodes.contentTypeNotSupported, 'Incompatible content types', { detail: `${path}: only text and data parts are accepted` });
export const invalidRequest = (detail: string) => new RpcError(rpcCodes.invalidRequest, 'Invalid Request', { detail });

/** A marketplace error plus where it left things (a send whose freeze failed). */
export class DecoratedError extends Error {
  constructor(
    readonly error: AppError,
    readonly extra: Record<string, unknown>,
  ) {
    super(error.message);
  }
}

/** A refused cancel is A2A's "task not cancelable" (-32002), still carrying the 4090 details. */
export function asNotCancelable(error: unknown): unknown {
  if (!(error instanceof AppError) || error.errorName !== 'invalid_state_transition') return error;
  return new RpcError(rpcCodes.taskNotCancelable, error.detail ?? 'Task cannot be canceled', errorBody(error) as unknown as Record<string, unknown>);
}

export function fromAppError(error: AppError): RpcErrorObject {
  return { code: error.rpcCode, message: error.detail ?? error.errorName, data: errorBody(error) };
}

export function toRpcError(error: unknown, log: Logger): RpcErrorObject {
  if (error instanceof RpcError) return { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) };
  if (error instanceof DecoratedError) {
    const base = fromAppError(error.error);
    return { ...base, data: { ...(base.data as object), ...error.extra } };
  }
  return fromAppError(toAppError(error, (message, cause) => log.error(`json-rpc: ${message}`, { error: cause })));
}

export const errorResponse = (id: JSONRPCID, error: RpcErrorObject): JSONRPCErrorResponse => ({ jsonrpc: '2.0', id, error });

export const parseErrorResponse = (detail: string) => errorResponse(null, fromAppError(new AppError('invalid_json', detail)));
