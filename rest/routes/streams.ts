import { z } from 'zod';
import type { Principal } from '../../src/engine/dependencies.ts';
import type { Engine } from '../../src/engine/index.ts';
import { AppError } from '../../src/errors.ts';
import { eventJson } from '../../src/events/publisher.ts';
import { type SseStream, frame, openSse, parseLastEventId } from '../../src/events/sse.ts';
import type { StreamEvent, StreamListener, Subscription } from '../../src/events/stream-types.ts';
import { transactionIdParams } from '../../src/schemas/transactions.ts';
import { type RouteInput, handled, route } from '../route.ts';

/**
 * Live transaction events as server-sent events, readable by a plain EventSource: `id:` is the
 * stream's sequence, so a reconnect with Last-Event-ID resumes exactly after the last event seen.
 */
const streamEvent = z
  .object({
    id: z.string(), transaction_id: z.string(), transaction_sequence: z.number().int(), type: z.string(),
    data: z.object({ action: z.string(), previous_status: z.string().nullable(), transaction: z.record(z.string(), z.unknown()) }),
    created_at: z.string(),
  })
  .meta({ id: 'TransactionEvent', description: 'One SSE event: `id` = stream sequence, `event` = type, `data` = this object' });

const lastEventQuery = z.object({ last_event_id: z.string().optional().meta({ description: 'Alternative to the Last-Event-ID header' }) });

/**
 * Subscribers of one stream receive the same event with the same sequence: the frame is built
 * once per (event, sequence) and shared, instead of one copy per subscriber.
 */
const frames = new WeakMap<object, Map<string, string>>();
function sharedFrame(item: StreamEvent): string {
  let bySequence = frames.get(item.event);
  if (!bySequence) {
    bySequence = new Map();
    frames.set(item.event, bySequence);
  }
  let text = bySequence.get(item.sequence);
  if (text === undefined) {
    text = frame(eventJson(item.event), item.sequence, item.event.type);
    bySequence.set(item.sequence, text);
  }
  return text;
}

type Opener = (principal: Principal, afterSequence: string | undefined, listener: StreamListener) => Promise<Subscription>;

async function serve(engine: Engine, input: RouteInput<unknown, { last_event_id?: string }, unknown>, open: Opener) {
  const afterSequence = parseLastEventId(input.request.get('last-event-id') ?? input.query.last_event_id);
  if (afterSequence === null) {
    throw new AppError('validation_error', 'invalid Last-Event-ID', { errors: [{ path: 'header.Last-Event-ID', message: 'must be a sequence number' }] });
  }
  // A stream over the caps is refused (4290) before it subscribes, so it costs nothing.
  const release = engine.admission.sseStreams.open(input.principal!);
  // Subscribing first means a 4040 is still answered as an envelope, before any stream starts.
  let stream: SseStream | null = null;
  const early: StreamEvent[] = [];
  const write = (item: StreamEvent) => stream!.sendFrame(sharedFrame(item));
  let subscription: Subscription;
  try {
    subscription = await open(input.principal!, afterSequence, {
      onEvent: (item) => (stream ? write(item) : (early.push(item), true)),
      onEnd: () => stream?.close(),
    });
  } catch (error) {
    release();
    throw error;
  }
  stream = openSse(input.response, () => {
    release();
    subscription.close();
  });
  for (const item of early) write(item);
  return handled;
}

export const streamRoutes = (engine: Engine) => [
  route({
    method: 'get', path: '/api/v1/transactions/events', tag: 'streams', auth: 'user', rateLimits: ['streamOpensPerCredential'], rawResponse: { contentType: 'text/event-stream' },
    summary: "Server-sent events for all of the caller's transactions (resume with Last-Event-ID)",
    query: lastEventQuery, response: streamEvent,
    handler: (input) => serve(engine, input, (principal, afterSequence, listener) => engine.streams.subscribeUser(principal, { afterSequence }, listener)),
  }),
  route({
    method: 'get', path: '/api/v1/transactions/:tx_id/events', tag: 'streams', auth: 'user', errors: [4040], rateLimits: ['streamOpensPerCredential'], rawResponse: { contentType: 'text/event-stream' },
    summary: "Server-sent events for one transaction, from its creation on (resume with Last-Event-ID)",
    params: transactionIdParams, query: lastEventQuery, response: streamEvent,
    handler: (input) => serve(engine, input, (principal, afterSequence, listener) =>
      engine.streams.subscribeTransaction(principal, input.params.tx_id, { afterSequence }, listener)),
  }),
];
