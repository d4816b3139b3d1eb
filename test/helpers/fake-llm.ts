import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenAI-compatible endpoint: POST /chat/completions (plain and with
 * `stream: true`) and POST /embeddings. Tests set `mode` to make it answer well, fail (HTTP 500),
 * hang (never answer), or answer garbage (not JSON); every request is kept for inspection.
 */
export type FakeLlmMode = 'ok' | 'fail' | 'hang' | 'garbage';

export interface FakeLlmRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface FakeLlm {
  /** The base URL to configure as LLM_BASE_URL (…/v1). */
  url: string;
  mode: FakeLlmMode;
  /** The assistant's text for the next chat answers (streamed as `streamDeltas` when set). */
  reply: string;
  streamDeltas: string[] | null;
  /** Stream mode only: stop after this many deltas and then hang (a model stalling mid-answer). */
  hangAfterDeltas: number | null;
  /** Stream mode only: end the stream without the closing `data: [DONE]` (an answer cut off). */
  omitDone: boolean;
  /** Stream mode only: after this many deltas, break the connection (a model server failing mid-answer). */
  dropAfterDeltas: number | null;
  /** The vector /embeddings answers for each input text (default `fakeEmbedding`); tests set one to steer a rerank. */
  embedding: (text: string) => number[];
  requests: FakeLlmRequest[];
  /** How many requests had their connection closed before their answer ended (a caller that aborted). */
  closedEarly: number;
  close(): Promise<void>;
}

/** A deterministic vector per text: its length and the code of its first character. */
export const fakeEmbedding = (text: string) => [text.length, text.codePointAt(0) ?? 0, 1];

export async function startFakeLlm(): Promise<FakeLlm> {
  const fake: FakeLlm = {
    url: '',
    mode: 'ok',
    reply: 'hello',
    streamDeltas: null,
    hangAfterDeltas: null,
    omitDone: false,
    dropAfterDeltas: null,
    embedding: fakeEmbedding,
    requests: [],
    closedEarly: 0,
    close: async () => {},
  };
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      fake.requests.push({ path: request.url ?? '', headers: request.headers, body });
      response.on('close', () => {
        if (!response.writableFinished) fake.closedEarly += 1;
      });
      answer(fake, request.url ?? '', body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  fake.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}

function answer(fake: FakeLlm, path: string, body: Record<string, unknown>, response: ServerResponse) {
  if (fake.mode === 'hang') return;
  if (fake.mode === 'fail') return void response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"boom"}}');
  if (fake.mode === 'garbage') return void response.writeHead(200, { 'content-type': 'application/json' }).end('<html>not json');
  if (path === '/v1/chat/completions' && body.stream === true) return stream(fake, response);
  if (path === '/v1/chat/completions') {
    return void json(response, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: fake.reply }, finish_reason: 'stop' }],
    });
  }
  if (path === '/v1/embeddings') {
    const input = (Array.isArray(body.input) ? body.input : [body.input]) as string[];
    return void json(response, { object: 'list', data: input.map((item, index) => ({ object: 'embedding', index, embedding: fake.embedding(item) })) });
  }
  response.writeHead(404).end();
}

function json(response: ServerResponse, value: unknown) {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

function stream(fake: FakeLlm, response: ServerResponse) {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const deltas = fake.streamDeltas ?? [fake.reply];
  deltas.forEach((delta, position) => {
    if (fake.hangAfterDeltas !== null && position >= fake.hangAfterDeltas) return;
    if (fake.dropAfterDeltas !== null && position >= fake.dropAfterDeltas) return;
    const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: delta }, finish_reason: null }] };
    // A comment line and a CRLF line end, as real servers send, to exercise the parser.
    response.write(`: keep-alive\r\ndata: ${JSON.stringify(chunk)}\r\n\r\n`);
  });
  if (fake.hangAfterDeltas !== null) return;
  if (fake.dropAfterDeltas !== null) return void setTimeout(() => response.destroy(), 20);
  response.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
  response.end(fake.omitDone ? '' : 'data: [DONE]\n\n');
}
