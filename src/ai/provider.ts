import { z } from 'zod';
import { limits } from '../limits.ts';
import type { Logger } from '../logger.ts';
import { AiCallError, parseJson, readBoundedText, reasonOf, sseDataLines } from './http.ts';

/**
 * The one client of the OpenAI-compatible endpoint (decisions section 8): chat completions,
 * streamed chat completions and embeddings. Every method answers "no model" (null, or the
 * caller's fallback stream) instead of throwing when the endpoint is not configured, fails,
 * answers garbage or is too slow, after ONE log line that says so and why, so each feature
 * keeps working with its deterministic built-in analyser. Nothing is retried, and a failure
 * makes the following calls fall back at once for a cool-down: an endpoint that is down must not
 * make every request wait out a timeout, nor receive a storm of retries when it comes back.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatOptions {
  /** What the answer is for ("clarity", "pricing explanation"), named in the log line. */
  purpose?: string;
  temperature?: number;
  maxTokens?: number;
  /** Aborts the call (a client that went away); an aborted call is not a failure of the endpoint. */
  signal?: AbortSignal;
}

export interface ChatStreamOptions extends ChatOptions {
  /** Yielded instead when the model cannot be used before its first delta; none: an empty stream. */
  fallback?: () => AsyncIterable<string> | Iterable<string>;
  /**
   * Called when the stream fails after some deltas were yielded (those cannot be taken back): a
   * caller that must not mistake a cut-off answer for a whole one (ai-create) learns it here,
   * after the one log line. The stream then ends as it always does.
   */
  onCutOff?: (reason: string) => void;
}

export interface AiProvider {
  /** True when chat completions go to a model (LLM_BASE_URL and LLM_MODEL set). */
  readonly configured: boolean;
  /** The assistant's text, or null when the built-in fallback must be used. */
  chat(messages: ChatMessage[], options?: ChatOptions): Promise<string | null>;
  /** Text deltas as they arrive; stops at `[DONE]`, at the end of the stream, or on abort. */
  chatStream(messages: ChatMessage[], options?: ChatStreamOptions): AsyncIterable<string>;
  /** The model embeddings are asked of (LLM_EMBEDDING_MODEL with a chat endpoint), or null: none. */
  readonly embeddingModel: string | null;
  /** One vector per text, in order, or null when not configured or on failure. */
  embed(texts: string[]): Promise<number[][] | null>;
}

export interface AiSettings {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  embeddingModel?: string;
}

/** Tests shorten the timeouts and the cool-down; production uses limits.ts. */
export interface AiProviderOptions {
  chatTimeoutMs?: number;
  streamTimeoutMs?: number;
  embeddingTimeoutMs?: number;
  cooldownMs?: number;
  nowMs?: () => number;
}

export const aiSettingsFromConfig = (config: {
  LLM_BASE_URL?: string;
  LLM_API_KEY?: string;
  LLM_MODEL?: string;
  LLM_EMBEDDING_MODEL?: string;
}): AiSettings => ({
  baseUrl: config.LLM_BASE_URL,
  apiKey: config.LLM_API_KEY,
  model: config.LLM_MODEL,
  embeddingModel: config.LLM_EMBEDDING_MODEL,
});

const chatAnswer = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string() }) })).min(1) });
const streamChunk = z.object({ choices: z.array(z.object({ delta: z.object({ content: z.string().nullish() }).optional() })).optional() });
const embeddingAnswer = z.object({ data: z.array(z.object({ embedding: z.array(z.number().finite()).min(1), index: z.number().int().min(0).optional() })) });

export function createAiProvider(settings: AiSettings, log: Logger, options: AiProviderOptions = {}): AiProvider {
  const timeouts = {
    chat: options.chatTimeoutMs ?? limits.aiChatTimeoutMs,
    stream: options.streamTimeoutMs ?? limits.aiChatStreamTimeoutMs,
    embed: options.embeddingTimeoutMs ?? limits.aiEmbeddingTimeoutMs,
  };
  const cooldownMs = options.cooldownMs ?? limits.aiFailureCooldownMs;
  const nowMs = options.nowMs ?? Date.now;
  const base = settings.baseUrl?.replace(/\/+$/, '');
  const chatMissing = !base ? 'LLM_BASE_URL is not set' : !settings.model ? 'LLM_MODEL is not set' : null;
  const embedMissing = chatMissing ?? (!settings.embeddingModel ? 'LLM_EMBEDDING_MODEL is not set' : null);
  const notConfiguredLogged = new Set<string>();
  let lastFailure: { atMs: number; reason: string } | null = null;

  /**
   * The one log line of a fallback. "Not configured" is the normal state of a deployment without
   * a model, so it is said once per operation at info level and then only at debug level.
   */
  function fellBack(operation: string, purpose: string | undefined, reason: string, configured: boolean) {
    const fields = { operation, purpose: purpose ?? operation, reason };
    if (configured) log.warn('AI provider call failed; falling back to the built-in analyser', fields);
    else if (notConfiguredLogged.has(operation)) log.debug('AI provider not configured; using the built-in analyser', fields);
    else {
      notConfiguredLogged.add(operation);
      log.info('AI provider not configured; using the built-in analyser', fields);
    }
  }

  /** Why a call must not even be tried now, or null when it may go out. */
  function refusal(missing: string | null): { reason: string; configured: boolean } | null {
    if (missing) return { reason: missing, configured: false };
    if (lastFailure && nowMs() - lastFailure.atMs < cooldownMs) {
      return { reason: `cooling down for ${cooldownMs} ms after a failure (${lastFailure.reason})`, configured: true };
    }
    return null;
  }

  function failed(reason: string) {
    lastFailure = { atMs: nowMs(), reason };
  }

  async function post(path: string, body: unknown, signal: AbortSignal, accept: string): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept };
    if (settings.apiKey) headers.authorization = `Bearer ${settings.apiKey}`;
    // Redirects are refused: following one could carry the key to an address nobody configured.
    const response = await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body), signal, redirect: 'error' });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new AiCallError(`endpoint answered HTTP ${response.status}`);
    }
    return response;
  }

  const signalWith = (timeoutMs: number, caller?: AbortSignal) =>
    caller ? AbortSignal.any([caller, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);

  async function chat(messages: ChatMessage[], chatOptions: ChatOptions = {}): Promise<string | null> {
    const refused = refusal(chatMissing);
    if (refused) {
      fellBack('chat', chatOptions.purpose, refused.reason, refused.configured);
      return null;
    }
    try {
      const response = await post(
        '/chat/completions',
        requestBody(messages, chatOptions, false),
        signalWith(timeouts.chat, chatOptions.signal),
        'application/json',
      );
      const parsed = chatAnswer.safeParse(parseJson(await readBoundedText(response, limits.aiChatResponseBytesMax), 'answer'));
      if (!parsed.success) throw new AiCallError('answer is not a chat completion');
      return parsed.data.choices[0]!.message.content;
    } catch (error) {
      if (chatOptions.signal?.aborted) return null;
      const reason = reasonOf(error, timeouts.chat);
      failed(reason);
      fellBack('chat', chatOptions.purpose, reason, true);
      return null;
    }
  }

  function requestBody(messages: ChatMessage[], chatOptions: ChatOptions, stream: boolean) {
    return {
      model: settings.model,
      messages: messages.map((message) => ({ role: message.role, content: message.content.slice(0, limits.aiPromptTextLengthMax) })),
      stream,
      ...(chatOptions.temperature === undefined ? {} : { temperature: chatOptions.temperature }),
      // Every call is bounded: a model that would write on and on costs tokens and time we never use.
      max_tokens: Math.min(chatOptions.maxTokens ?? limits.aiChatMaxTokens, limits.aiChatMaxTokens),
    };
  }

  async function* chatStream(messages: ChatMessage[], streamOptions: ChatStreamOptions = {}): AsyncGenerator<string> {
    const refused = refusal(chatMissing);
    if (refused) {
      fellBack('chat_stream', streamOptions.purpose, refused.reason, refused.configured);
      if (streamOptions.fallback) yield* streamOptions.fallback();
      return;
    }
    let delivered = 0;
    const stream = modelStream(messages, streamOptions);
    try {
      for await (const delta of stream) {
        delivered += 1;
        yield delta;
      }
    } catch (error) {
      if (streamOptions.signal?.aborted) return;
      const reason = reasonOf(error, delivered === 0 ? timeouts.chat : timeouts.stream);
      failed(reason);
      fellBack('chat_stream', streamOptions.purpose, delivered === 0 ? reason : `${reason}, after ${delivered} deltas`, true);
      // Deltas already sent cannot be taken back; only a stream that never started is replaced.
      if (delivered === 0 && streamOptions.fallback) yield* streamOptions.fallback();
      else if (delivered > 0) streamOptions.onCutOff?.(reason);
    }
  }

  /**
   * The model's deltas. The first must come within the chat timeout and the whole stream within
   * the stream timeout; leaving the loop early (the consumer stopped, or the caller's signal
   * fired) aborts the request so the endpoint stops generating for nobody.
   */
  async function* modelStream(messages: ChatMessage[], streamOptions: ChatStreamOptions): AsyncGenerator<string> {
    const controller = new AbortController();
    const stopFirst = setTimeout(() => controller.abort(new AiCallError(`no first delta within ${timeouts.chat} ms`)), timeouts.chat);
    const stopAll = setTimeout(() => controller.abort(new AiCallError(`stream not finished within ${timeouts.stream} ms`)), timeouts.stream);
    const onCallerAbort = () => controller.abort(streamOptions.signal?.reason);
    streamOptions.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (streamOptions.signal?.aborted) controller.abort(streamOptions.signal.reason);
    try {
      const response = await post('/chat/completions', requestBody(messages, streamOptions, true), controller.signal, 'text/event-stream');
      if (!response.body || !/event-stream/.test(response.headers.get('content-type') ?? '')) throw new AiCallError('answer is not an event stream');
      for await (const data of sseDataLines(response.body, limits.aiChatStreamBytesMax)) {
        if (data === '[DONE]') return;
        const chunk = streamChunk.safeParse(parseJson(data, 'stream event'));
        if (!chunk.success) throw new AiCallError('stream event is not a chat completion chunk');
        const text = chunk.data.choices?.[0]?.delta?.content;
        if (!text) continue;
        clearTimeout(stopFirst);
        yield text;
      }
      // Every OpenAI-compatible stream ends with [DONE]; without it the answer was cut off.
      throw new AiCallError('stream ended before [DONE]');
    } catch (error) {
      // An abort of our own timers carries its reason; report that rather than "aborted".
      throw controller.signal.aborted && controller.signal.reason instanceof AiCallError ? controller.signal.reason : error;
    } finally {
      clearTimeout(stopFirst);
      clearTimeout(stopAll);
      streamOptions.signal?.removeEventListener('abort', onCallerAbort);
      controller.abort();
    }
  }

  async function embed(texts: string[]): Promise<number[][] | null> {
    if (texts.length === 0) return [];
    const refused =
      refusal(embedMissing) ??
      (texts.length > limits.aiEmbeddingTextsMax ? { reason: `more than ${limits.aiEmbeddingTextsMax} texts in one call`, configured: true } : null);
    if (refused) {
      fellBack('embed', 'embeddings', refused.reason, refused.configured);
      return null;
    }
    try {
      const input = texts.map((text) => text.slice(0, limits.aiEmbeddingTextLengthMax));
      const response = await post('/embeddings', { model: settings.embeddingModel, input }, AbortSignal.timeout(timeouts.embed), 'application/json');
      return vectorsOf(parseJson(await readBoundedText(response, limits.aiEmbeddingResponseBytesMax), 'answer'), texts.length);
    } catch (error) {
      const reason = reasonOf(error, timeouts.embed);
      failed(reason);
      fellBack('embed', 'embeddings', reason, true);
      return null;
    }
  }

  return { configured: chatMissing === null, embeddingModel: embedMissing === null ? settings.embeddingModel! : null, chat, chatStream, embed };
}

/** The vectors in input order: one per text, all of one dimension, or the answer is refused. */
function vectorsOf(answer: unknown, count: number): number[][] {
  const parsed = embeddingAnswer.safeParse(answer);
  if (!parsed.success) throw new AiCallError('answer is not an embeddings list');
  const items = parsed.data.data;
  if (items.length !== count) throw new AiCallError(`answer has ${items.length} vectors for ${count} texts`);
  const ordered = items.every((item) => item.index !== undefined) ? [...items].sort((a, b) => a.index! - b.index!) : items;
  const dimension = ordered[0]!.embedding.length;
  if (ordered.some((item, position) => item.embedding.length !== dimension || (item.index !== undefined && item.index !== position))) {
    throw new AiCallError('answer vectors differ in dimension or index');
  }
  return ordered.map((item) => item.embedding);
}
