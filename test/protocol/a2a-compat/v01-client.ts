import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import * as models from './v01-models.ts';

/**
 * The original A2A samples' client (google/A2A, samples/python/common/client/client.py and
 * card_resolver.py, driven as samples/python/hosts/cli/__main__.py drives it), in TypeScript over
 * plain fetch, sending exactly their wire format:
 *
 * - request ids and task ids are `uuid4().hex` (32 hex digits), the session id too;
 * - bodies are pydantic's `model_dump()`: every absent optional field is sent as null
 *   (`sessionId`, `pushNotification`, `historyLength`, `metadata`, a part's `name`...);
 * - no A2A-Version header; the card is read from /.well-known/agent.json;
 * - plain calls raise on a non-2xx status (httpx `raise_for_status`), answers are parsed with
 *   the response models (v01-models.ts) and a JSON-RPC error is the response's `error`;
 * - streams (httpx_sse) require `text/event-stream` and parse each `data:` as a response.
 *
 * Credentials: the samples send none; an agent adds its headers to every request.
 */
export const hexId = () => randomUUID().replaceAll('-', '');

export class A2AClientHTTPError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(`HTTP Error ${statusCode}: ${message}`);
    this.name = 'A2AClientHTTPError';
  }
}

/** httpx_sse's refusal of a response that is not an event stream. */
export class SSEError extends Error {
  override name = 'SSEError';
}

/** pydantic's ValidationError: the answer does not fit the samples' model. */
function validate<T extends z.ZodType>(schema: T, value: unknown, model: string): z.output<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new Error(`${model} validation failed: ${JSON.stringify(result.error.issues)} in ${JSON.stringify(value)}`);
  return result.data;
}

type Dumped = Record<string, unknown>;

export interface SendPart {
  text?: string;
  data?: Record<string, unknown>;
}

/** TextPart / DataPart `model_dump()`: the defaults and the nulls included. */
export const dumpParts = (parts: SendPart[]): Dumped[] =>
  parts.map((part) =>
    part.data ? { type: 'data', name: null, data: part.data, metadata: null } : { type: 'text', name: null, text: part.text ?? '', metadata: null },
  );

/** TaskSendParams `model_dump()`, with the CLI's `acceptedOutputModes: ['text']`. */
export function taskSendParams(input: {
  id: string;
  sessionId: string;
  parts: SendPart[];
  historyLength?: number;
  pushNotification?: { url: string; token?: string };
}): Dumped {
  return {
    id: input.id,
    sessionId: input.sessionId,
    message: { role: 'user', parts: dumpParts(input.parts), metadata: null },
    acceptedOutputModes: ['text'],
    pushNotification: input.pushNotification ? { url: input.pushNotification.url, token: input.pushNotification.token ?? null, authentication: null } : null,
    historyLength: input.historyLength ?? null,
    metadata: null,
  };
}

export async function resolveAgentCard(baseUrl: string): Promise<models.AgentCard> {
  const url = `${baseUrl.replace(/\/+$/, '')}/.well-known/agent.json`;
  const response = await fetch(url);
  if (!response.ok) throw new A2AClientHTTPError(response.status, `Client error '${response.status} ${response.statusText}' for url '${url}'`);
  return validate(models.agentCard, await response.json(), 'AgentCard');
}

export class SamplesClient {
  constructor(
    readonly url: string,
    readonly headers: Record<string, string> = {},
  ) {}

  private body(method: string, params: Dumped) {
    return JSON.stringify({ jsonrpc: '2.0', id: hexId(), method, params });
  }

  private async request(method: string, params: Dumped): Promise<unknown> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { ...this.headers, 'Content-Type': 'application/json', Accept: '*/*' },
      body: this.body(method, params),
    });
    if (!response.ok) throw new A2AClientHTTPError(response.status, `Client error '${response.status} ${response.statusText}' for url '${this.url}'`);
    return response.json();
  }

  sendTask = async (params: Dumped) => validate(models.taskResponse, await this.request('tasks/send', params), 'SendTaskResponse');
  getTask = async (input: { id: string; historyLength?: number }) =>
    validate(
      models.taskResponse,
      await this.request('tasks/get', { id: input.id, metadata: null, historyLength: input.historyLength ?? null }),
      'GetTaskResponse',
    );
  cancelTask = async (input: { id: string }) =>
    validate(models.taskResponse, await this.request('tasks/cancel', { id: input.id, metadata: null }), 'CancelTaskResponse');

  /** The samples' A2AClient.set_task_callback and get_task_callback. */
  setTaskCallback = async (input: { id: string; pushNotificationConfig: { url: string; token?: string } }) =>
    validate(
      models.taskPushNotificationResponse,
      await this.request('tasks/pushNotification/set', {
        id: input.id,
        pushNotificationConfig: { url: input.pushNotificationConfig.url, token: input.pushNotificationConfig.token ?? null, authentication: null },
      }),
      'SetTaskPushNotificationResponse',
    );
  getTaskCallback = async (input: { id: string }) =>
    validate(
      models.taskPushNotificationResponse,
      await this.request('tasks/pushNotification/get', { id: input.id, metadata: null }),
      'GetTaskPushNotificationResponse',
    );

  sendTaskStreaming = (params: Dumped) => this.stream('tasks/sendSubscribe', params);
  resubscribe = (input: { id: string }) => this.stream('tasks/resubscribe', { id: input.id, metadata: null });

  /** connect_sse + iter_sse: no status check, the content type must be an event stream. */
  private async *stream(method: string, params: Dumped): AsyncGenerator<models.StreamingResponse> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: { ...this.headers, 'Content-Type': 'application/json', Accept: 'text/event-stream', 'Cache-Control': 'no-store' },
      body: this.body(method, params),
    });
    const contentType = (response.headers.get('content-type') ?? '').split(';')[0]!;
    if (!contentType.includes('text/event-stream')) {
      await response.body?.cancel();
      throw new SSEError(`Expected response header Content-Type to contain 'text/event-stream', got '${contentType}'`);
    }
    for await (const data of serverSentData(response.body!)) yield validate(models.streamingResponse, JSON.parse(data), 'SendTaskStreamingResponse');
  }
}

/** The `data` of each event of a text/event-stream body (lines joined by newlines, as the SSE spec says). */
async function* serverSentData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else {
        const colon = line.indexOf(':');
        const value = colon < 0 ? '' : line.slice(colon + 1);
        if ((colon < 0 ? line : line.slice(0, colon)) === 'data') data.push(value.startsWith(' ') ? value.slice(1) : value);
      }
    }
  }
  // An event the stream ended before terminating (no blank line) is dropped, as the SSE spec says.
}
