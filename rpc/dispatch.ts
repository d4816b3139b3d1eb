import { limits } from '../src/limits.ts';
import type { JSONRPCID, JSONRPCRequest, JSONRPCResponse } from 'json-rpc-2.0';
import { answersInV10, errorResponse, invalidRequest, rpcCodes, unsupportedOperation, versionNotSupported } from './errors.ts';
import type { RpcContext } from './context.ts';
import type { RpcServer } from './methods.ts';
import { streamingMethods } from './methods.ts';
import { supportedA2AVersions } from './shapes.ts';

/**
 * JSON-RPC 2.0 framing, shared by the HTTP and WebSocket transports. The library's own checks are
 * looser than the specification (it accepts an object id, answers a one-element batch with an
 * object, and throws on `[null]`), so each entry is checked here before it reaches the server,
 * and batches are run here, one entry after the other, in order.
 */
export const batchLengthMax = limits.rpcBatchLengthMax;

const isId = (value: unknown): value is JSONRPCID => value === null || typeof value === 'string' || typeof value === 'number';

/** The id to answer with: the request's own when it is a valid id, else null. */
export function idOf(entry: unknown): JSONRPCID {
  const id = typeof entry === 'object' && entry !== null && !Array.isArray(entry) ? (entry as { id?: unknown }).id : undefined;
  return isId(id) ? id : null;
}

function envelopeProblem(entry: unknown): string | null {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return 'a request must be an object';
  const request = entry as Record<string, unknown>;
  if (request.id !== undefined && !isId(request.id)) return 'id must be a string, a number or null';
  if (request.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if (typeof request.method !== 'string' || request.method === '') return 'method must be a non-empty string';
  if (request.params !== undefined && (typeof request.params !== 'object' || request.params === null)) return 'params must be an object or an array';
  if ('result' in request || 'error' in request) return 'a request has neither result nor error';
  return null;
}

export interface DispatchOptions {
  /** Over HTTP a streaming method owns the whole response, so it cannot be part of a batch. */
  streamsInBatch: boolean;
}

export type DispatchResult = JSONRPCResponse | JSONRPCResponse[] | null;

export function createDispatcher(server: RpcServer) {
  async function single(entry: unknown, context: RpcContext, inBatch: boolean, options: DispatchOptions): Promise<JSONRPCResponse | null> {
    const problem = envelopeProblem(entry);
    if (problem) {
      const { code, message, data } = invalidRequest(problem);
      return errorResponse(idOf(entry), { code, message, data });
    }
    const request = entry as JSONRPCRequest;
    // An A2A-Version this server does not speak: every call is refused, in v1.0's error shape
    // (the code exists since 1.0); a notification, which is owed no answer, does nothing.
    if (context.unsupportedVersion !== undefined) {
      if (request.id === undefined) return null;
      return server.errorOf(request.id, versionNotSupported(context.unsupportedVersion, supportedA2AVersions), true);
    }
    const v10 = answersInV10(request.method, context.headerGeneration);
    if (inBatch && !options.streamsInBatch && streamingMethods.has(request.method)) {
      if (request.id === undefined) return null;
      return server.errorOf(request.id, unsupportedOperation(`${request.method} streams its answer and cannot be part of a batch; send it alone`), v10);
    }
    // A call (not a notification) of a known method is answered here as the library would
    // answer it, without its layers of promises (about a twentieth of a read's time); anything
    // else is the library's.
    const method = request.id === undefined ? undefined : server.methods.get(request.method);
    if (method === undefined) return server.library.receive(request, context);
    try {
      return { jsonrpc: '2.0', id: request.id!, result: (await method(request.params, context)) ?? null };
    } catch (error) {
      return server.errorOf(request.id!, error, v10);
    }
  }

  /** Answers a parsed payload: one response, an array of them, or null when nothing is owed. */
  async function dispatch(payload: unknown, context: RpcContext, options: DispatchOptions): Promise<DispatchResult> {
    if (!Array.isArray(payload)) return single(payload, context, false, options);
    if (payload.length === 0) return errorResponse(null, { code: rpcCodes.invalidRequest, message: 'Invalid Request', data: { detail: 'an empty batch' } });
    if (payload.length > batchLengthMax) {
      return errorResponse(null, {
        code: rpcCodes.invalidRequest,
        message: 'Invalid Request',
        data: { detail: `a batch may hold at most ${batchLengthMax} requests` },
      });
    }
    const responses: JSONRPCResponse[] = [];
    for (const entry of payload) {
      const response = await single(entry, context, true, options);
      if (response) responses.push(response);
    }
    return responses.length > 0 ? responses : null;
  }

  return { dispatch };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
