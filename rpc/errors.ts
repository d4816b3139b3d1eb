import type { JSONRPCErrorResponse, JSONRPCID } from 'json-rpc-2.0';
import { z } from 'zod';
import { AppError, errorBody, toAppError } from '../src/errors.ts';
import type { Logger } from '../src/logger.ts';
import type { Generation } from './shapes.ts';

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
  versionNotSupported: -32009,
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
export const contentTypeNotSupported = (path: string) =>
  new RpcError(rpcCodes.contentTypeNotSupported, 'Incompatible content types', { detail: `${path}: only text and data parts are accepted` });
/** A2A v1.0's answer to an `A2A-Version` this server does not speak (specification 3.6.2). */
export const versionNotSupported = (requested: string, supported: readonly string[]) =>
  new RpcError(rpcCodes.versionNotSupported, 'Version not supported', {
    detail: `A2A-Version ${requested} is not supported; send one of ${supported.join(', ')}`,
    requested_version: requested,
    supported_versions: supported.join(','),
  });
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

/** A2A v1.0's errors by JSON-RPC code (specification 5.4), named as google.rpc.ErrorInfo's reason. */
const a2aReasons = new Map<number, string>([
  [-32001, 'TASK_NOT_FOUND'],
  [-32002, 'TASK_NOT_CANCELABLE'],
  [-32003, 'PUSH_NOTIFICATION_NOT_SUPPORTED'],
  [-32004, 'UNSUPPORTED_OPERATION'],
  [-32005, 'CONTENT_TYPE_NOT_SUPPORTED'],
  [-32006, 'INVALID_AGENT_RESPONSE'],
  [-32007, 'EXTENDED_AGENT_CARD_NOT_CONFIGURED'],
  [-32008, 'EXTENSION_SUPPORT_REQUIRED'],
  [-32009, 'VERSION_NOT_SUPPORTED'],
]);

/** ErrorInfo's metadata is a map of strings: the scalar fields of what the error carried. */
function metadataOf(data: unknown): Record<string, string> {
  if (typeof data !== 'object' || data === null) return {};
  const scalars = Object.entries(data).filter(([, value]) => ['string', 'number', 'boolean'].includes(typeof value));
  return Object.fromEntries(scalars.map(([key, value]) => [key, String(value)]));
}

/**
 * An A2A error as v1.0 renders it (specification 9.5): `data` is an array of google.protobuf.Any
 * in ProtoJSON, first a google.rpc.ErrorInfo (reason, domain "a2a-protocol.org"), then what the
 * error carried before (the marketplace envelope `{code, message, data}`) as a Struct, so a
 * client still finds the marketplace code. Errors outside A2A's own codes are left as they are.
 */
export function inV10Shape(error: RpcErrorObject): RpcErrorObject {
  const reason = a2aReasons.get(error.code);
  if (reason === undefined) return error;
  const metadata = metadataOf(error.data);
  const info = {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason,
    domain: 'a2a-protocol.org',
    ...(Object.keys(metadata).length > 0 ? { metadata } : {}),
  };
  // A Struct holds an object only; every error of this server carries one or nothing.
  const isObject = typeof error.data === 'object' && error.data !== null && !Array.isArray(error.data);
  const carried = isObject ? [{ '@type': 'type.googleapis.com/google.protobuf.Struct', value: error.data }] : [];
  return { ...error, data: [info, ...carried] };
}

export function fromAppError(error: AppError): RpcErrorObject {
  return { code: error.rpcCode, message: error.detail ?? error.errorName, data: errorBody(error) };
}

/** A call answers in v1.0's shapes when its method is a v1.0 name (PascalCase) or its A2A-Version header asks for 1.0. */
export const answersInV10 = (method: string, headerGeneration: Generation) => /^[A-Z]/.test(method) || headerGeneration === 'v1.0';

/** toRpcError, in v1.0's error shape when `v10` (inV10Shape). */
export function toRpcErrorIn(v10: boolean, error: unknown, log: Logger): RpcErrorObject {
  const rendered = toRpcError(error, log);
  return v10 ? inV10Shape(rendered) : rendered;
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

/**
 * A refusal of a whole HTTP exchange (credentials, rate limits, a backend unreachable while
 * checking them), over /api/v1/rpc and /mcp alike: the AppError, whose HTTP status and Retry-After
 * the transport sends, and the JSON-RPC error response, the envelope in its data. `source` names
 * the transport in the log line of an unexpected error.
 */
export function exchangeRefusal(error: unknown, id: JSONRPCID, log: Logger, source: string) {
  const refusal = toAppError(error, (message, cause) => log.error(`${source}: ${message}`, { error: cause }));
  return { refusal, body: errorResponse(id, fromAppError(refusal)) };
}

/**
 * What exchangeRefusal answers, for the OpenAPI document of /api/v1/rpc and /mcp: a JSON-RPC error
 * response whose error.data is the envelope's {code, message, data}. `jsonrpc` may be missing on
 * /api/v1/rpc (reply() in rpc/http.ts says why).
 */
export const jsonRpcRefusal = z
  .object({
    jsonrpc: z.literal('2.0').optional(),
    id: z.union([z.string(), z.number(), z.null()]),
    error: z.object({
      code: z.number().int(),
      message: z.string(),
      data: z
        .object({ code: z.number().int(), message: z.string(), data: z.record(z.string(), z.unknown()).nullable() })
        .optional()
        .meta({ description: "The envelope's code, message and data; absent on a refusal by the MCP SDK's transport (406, 415, a malformed message)" }),
    }),
  })
  .meta({ id: 'JsonRpcRefusal', description: 'A refusal of the whole exchange: a JSON-RPC error response, the marketplace envelope in error.data' });

export const parseErrorResponse = (detail: string) => errorResponse(null, fromAppError(new AppError('invalid_json', detail)));
