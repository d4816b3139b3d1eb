/**
 * The small pieces of HTTP the AI provider needs on top of Node's global fetch: reading a body
 * with a size bound, and splitting a server-sent event stream into its `data:` payloads. An
 * endpoint is outside our control, so nothing it sends is trusted to be small or well formed.
 */

/** Why a call to the endpoint failed, in words fit for one log line (never the key). */
export class AiCallError extends Error {
  override readonly name = 'AiCallError';
}

/** Reads the whole body as text, refusing (and cancelling the transfer) past `bytesMax`. */
export async function readBoundedText(response: Response, bytesMax: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > bytesMax) {
    await response.body?.cancel().catch(() => {});
    throw new AiCallError(`answer of ${declared} bytes is over the limit of ${bytesMax}`);
  }
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > bytesMax) {
      await response.body.cancel().catch(() => {});
      throw new AiCallError(`answer is over the limit of ${bytesMax} bytes`);
    }
    text += decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

/**
 * The `data:` payloads of a server-sent event stream, one per line, in order, ending at the
 * stream's end. Comments (`:`), `event:` and `id:` lines are skipped: chat completion streams
 * carry everything in `data:`. The total size is bounded like any other answer.
 */
export async function* sseDataLines(body: ReadableStream<Uint8Array>, bytesMax: number): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = '';
  let bytes = 0;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > bytesMax) throw new AiCallError(`stream is over the limit of ${bytesMax} bytes`);
    pending += decoder.decode(chunk, { stream: true });
    let newline = pending.indexOf('\n');
    while (newline !== -1) {
      const line = pending.slice(0, newline).replace(/\r$/, '');
      pending = pending.slice(newline + 1);
      if (line.startsWith('data:')) yield line.slice(5).trim();
      newline = pending.indexOf('\n');
    }
  }
  const last = (pending + decoder.decode()).replace(/\r$/, '');
  if (last.startsWith('data:')) yield last.slice(5).trim();
}

/** Parses JSON, turning a parse failure into a reason for the log. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AiCallError(`${what} is not JSON`);
  }
}

/** A short, key-free description of what went wrong, for the fallback log line. */
export function reasonOf(error: unknown, timeoutMs: number): string {
  if (error instanceof AiCallError) return error.message;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: { code?: string } }).cause;
    return cause?.code ? `${error.message} (${cause.code})` : error.message;
  }
  return 'unknown failure';
}
