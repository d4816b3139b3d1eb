import { assertSafeJson } from '../src/schemas/json-safety.ts';
import { requestLogger } from '../rest/request-log.ts';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Request, Response } from 'express';
import type { JSONRPCID, JSONRPCResponse } from 'json-rpc-2.0';
import type { Engine } from '../src/engine/index.ts';
import { AppError } from '../src/errors.ts';
import type { Logger } from '../src/logger.ts';
import { type SseStream, openSse, parseLastEventId } from '../src/events/sse.ts';
import { limits } from '../src/limits.ts';
import { type Dispatcher, idOf } from './dispatch.ts';
import { errorResponse, exchangeRefusal, fromAppError, parseErrorResponse, toRpcError, toRpcErrorIn } from './errors.ts';
import type { RpcContext } from './context.ts';
import { streamingMethods } from './methods.ts';
import { requestedVersionOf, versionContextOf } from './shapes.ts';
import { StreamStart, openTaskStream } from './task-stream.ts';
import { clientAddress } from '../rest/route.ts';
import { sendJson, sendRetryAfter } from '../rest/envelope.ts';

/**
 * POST /api/v1/rpc. The order of checks, and the HTTP status of each answer:
 *
 * 1. Body over 1 MiB: HTTP 413, error -32113 with data.code 4130 (the body is never parsed).
 * 2. Credentials, exactly as REST (X-Api-Key + X-Platform-User-Id, or a bearer token). A failure
 *    is answered with a JSON-RPC error (4010 -> -32110, 4011 -> -32111, with the envelope in
 *    `data`) under the REST status: HTTP 401 for missing or bad credentials, 400 for mixed ones
 *    (without an A2A-Version header, with no `jsonrpc` member: see reply()).
 *    Auth is a property of the HTTP exchange, not of one call in a batch, and a non-2xx status is
 *    what HTTP clients and @a2a-js/sdk recognize as an auth failure (its JSON-RPC transport still
 *    reads the error object from the body; its auth helper retries on 401). Credentials are
 *    checked before the body is interpreted, so an anonymous caller learns nothing from it.
 * 3. Over the JSON-RPC rate limit (each call of a batch counts): HTTP 429 with Retry-After, error
 *    -32129 with data.code 4290. A stream over the open-stream caps is refused with the same
 *    error under HTTP 200, like any other failure of a single call.
 * 4. Everything after that is HTTP 200: -32700, -32600, -32601, -32602 and marketplace errors.
 *    A request made only of notifications gets HTTP 204 and no body.
 * 5. A single streaming method answers as SSE; each `data:` is a JSON-RPC response with the id.
 *    When it fails before its stream starts (bad params, unknown task, the stream caps), the
 *    answer is still `text/event-stream`: one `event: error` frame carrying the JSON-RPC error,
 *    then the end, as the reference server of @a2a-js/sdk 0.3 does; SDK 0.2/0.3, the v0.1
 *    samples' SSE library and the conformance kit accept nothing else. Callers sending
 *    `A2A-Version: 1.0` (or a version this server does not speak) get the plain JSON error instead, as the reference server of
 *    @a2a-js/sdk 1.x answers them (its client then raises the typed error). Failures of the
 *    whole exchange (steps 1 to 3) keep their JSON body under their non-2xx status.
 */
/** `address`: the client's, to count authentication failures by; absent when a socket checks again. */
export async function authenticateHeaders(engine: Engine, headers: IncomingHttpHeaders, address?: string) {
  const one = (name: string) => {
    const value = headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  return engine.identity.authenticate({ apiKey: one('x-api-key'), platformUserId: one('x-platform-user-id'), authorization: one('authorization') }, address);
}

/** Reads the raw body up to `max` bytes; beyond that the rest is drained and dropped. */
function readBody(request: IncomingMessage, max: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    if (Number(request.headers['content-length'] ?? 0) > max) {
      request.resume();
      resolve(null);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    request.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > max) {
        over = true;
        chunks.length = 0;
        resolve(null);
      } else {
        chunks.push(chunk);
      }
    });
    request.on('end', () => over || resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * A refusal under a non-2xx status (401, 400, 413, 429) to a caller that sent no A2A-Version
 * header leaves out the `jsonrpc` member: @a2a-js/sdk 0.2.x reads a non-2xx body as text and, when
 * it finds `jsonrpc` there, reads the body a second time and crashes ("Body has already been
 * read") instead of reporting the error. Without the member it reports code and message; 0.3.x
 * and the v0.1 samples still see the status and the error object. Callers that send the header
 * (@a2a-js/sdk 1.x) get the complete JSON-RPC response.
 */
function reply(response: Response, status: number, body: JSONRPCResponse | JSONRPCResponse[]) {
  if (status >= 300 && requestedVersionOf(response.req) === undefined && !Array.isArray(body)) {
    const { jsonrpc: _jsonrpc, ...rest } = body;
    return sendJson(response, status, rest);
  }
  return sendJson(response, status, body);
}

/**
 * A refusal of the whole exchange: its HTTP status (401, 429, 503 with Retry-After), the JSON-RPC
 * error as body. Also the answer to a refusal before serveHttp (the Origin guard: src/app.ts).
 */
export function refuseExchange(response: Response, error: unknown, id: ReturnType<typeof idOf> | null, log: Logger) {
  const { refusal, body } = exchangeRefusal(error, id, log, 'json-rpc');
  sendRetryAfter(response, refusal);
  return reply(response, refusal.httpStatus, body);
}

/** Answers one POST /api/v1/rpc exchange (see the order of checks above). */
export async function serveHttp(engine: Engine, dispatcher: Dispatcher, request: Request, response: Response) {
  const log = requestLogger(request, engine.dependencies.log);
  const text = await readBody(request, limits.requestBodyBytesMax);
  if (text === null) {
    response.setHeader('Connection', 'close');
    const error = new AppError('payload_too_large', `request body is over ${limits.requestBodyBytesMax} bytes`);
    return reply(response, 413, errorResponse(null, fromAppError(error)));
  }
  const parsed = tryParse(text);
  let context: RpcContext;
  try {
    context = {
      principal: await authenticateHeaders(engine, request.headers, clientAddress(request)),
      ...versionContextOf(requestedVersionOf(request)),
      log,
    };
  } catch (error) {
    return refuseExchange(response, error, parsed.ok ? idOf(parsed.value) : null, log);
  }
  // Each call counts, so a batch of 50 costs what 50 single requests cost. Like authentication,
  // a refusal concerns the whole exchange: HTTP 429 with Retry-After, and the JSON-RPC error.
  try {
    const calls = parsed.ok && Array.isArray(parsed.value) ? Math.max(1, parsed.value.length) : 1;
    await engine.admission.consume(['rpcCallsPerCredential', 'rpcCallsPerApiKey'], { address: clientAddress(request), principal: context.principal }, calls);
  } catch (error) {
    return refuseExchange(response, error, parsed.ok ? idOf(parsed.value) : null, log);
  }
  if (!parsed.ok) return reply(response, 200, parseErrorResponse('request body is not valid JSON'));
  try {
    assertSafeJson(parsed.value, 'params');
  } catch (error) {
    return reply(response, 200, errorResponse(idOf(parsed.value), toRpcError(error, log)));
  }
  const answer = answerOf(response, errorsAsSse(parsed.value, context));
  const afterSequence = parseLastEventId(request.get('last-event-id'));
  // Under a version this server does not speak, every call is refused as such (rpc/dispatch.ts).
  if (afterSequence === null && context.unsupportedVersion === undefined) {
    const error = new AppError('validation_error', 'invalid Last-Event-ID', {
      errors: [{ path: 'header.Last-Event-ID', message: 'must be a sequence number' }],
    });
    return answer(errorResponse(idOf(parsed.value), fromAppError(error)));
  }
  const result = await dispatcher.dispatch(parsed.value, context, { streamsInBatch: false });
  if (result === null) return response.status(204).end();
  if (!Array.isArray(result) && result.result instanceof StreamStart) {
    return streamOverSse(engine, context, result.id, result.result, afterSequence ?? undefined, request, response, answer);
  }
  return answer(result);
}

/** A single call of a streaming method, from a client that reads its errors from the stream. */
function errorsAsSse(body: unknown, context: RpcContext): boolean {
  const method = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { method?: unknown }).method : undefined;
  return typeof method === 'string' && streamingMethods.has(method) && context.headerGeneration !== 'v1.0';
}

/** Writes an HTTP 200 answer: JSON, or for `sse` one SSE error frame and the end of the stream. */
function answerOf(response: Response, sse: boolean) {
  return (body: JSONRPCResponse | JSONRPCResponse[]) => {
    if (!sse) return reply(response, 200, body);
    const stream = openSse(response, () => {});
    stream.send(JSON.stringify(body), undefined, 'error');
    stream.close();
  };
}

/** Subscribes first, so that a failure is still one error answer (see 5 above); then switches to SSE. */
async function streamOverSse(
  engine: Engine,
  context: RpcContext,
  id: JSONRPCID,
  start: StreamStart,
  afterSequence: string | undefined,
  request: Request,
  response: Response,
  answer: ReturnType<typeof answerOf>,
) {
  let sse: SseStream | null = null;
  let ended = false;
  const early: [string, string | undefined][] = [];
  const write = (data: string, sequence: string | undefined) => sse!.send(data, sequence);
  let stream: Awaited<ReturnType<typeof openTaskStream>>;
  let release = () => {};
  try {
    await engine.admission.consume(['streamOpensPerCredential', 'streamOpensPerApiKey'], { address: clientAddress(request), principal: context.principal });
    // A revocation of the caller's API key ends the stream, even one heard before it got here.
    release = engine.admission.sseStreams.open(context.principal, () => {
      ended = true;
      sse?.close();
    });
    await engine.identity.refuseIfRevokedSince(context.principal);
    stream = await openTaskStream(engine, context.principal, start, afterSequence, {
      emit: (result, sequence) => {
        const data = JSON.stringify({ jsonrpc: '2.0', id, result });
        if (sse) return write(data, sequence);
        early.push([data, sequence]);
        return true;
      },
      end: () => {
        ended = true;
        sse?.close();
      },
    });
  } catch (error) {
    release();
    return answer(
      errorResponse(id, toRpcErrorIn(start.generation === 'v1.0' || context.headerGeneration === 'v1.0', error, context.log ?? engine.dependencies.log)),
    );
  }
  sse = openSse(response, () => {
    release();
    stream.close();
  });
  for (const [data, sequence] of early) if (!write(data, sequence)) return;
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- ended is set by the close callback, which may have run during the awaits above
  if (ended) sse.close();
}
