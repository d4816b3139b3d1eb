import { z } from 'zod';
import type { Principal } from '../../src/engine/common/index.ts';
import type { Engine } from '../../src/engine/index.ts';
import { AppError } from '../../src/errors.ts';
import { eventJson } from '../../src/events/publisher.ts';
import { type SseStream, frame, openSse, parseLastEventId } from '../../src/events/sse.ts';
import type { StreamEvent, StreamListener, Subscription } from '../../src/events/stream-types.ts';
import { transactionEventView, transactionIdParams } from '../../src/schemas/transactions.ts';
import { type RouteInput, handled, route } from '../route.ts';

/**
 * Live transaction events as server-sent events, readable by a plain EventSource: `id:` is the
 * stream's sequence, so a reconnect with Last-Event-ID resumes exactly after the last event seen.
 */
export const streamEvent = z
  .object({
    id: z.string(),
    transaction_id: z.string(),
    transaction_sequence: z.number().int(),
    type: z.string(),
    data: z.object({ action: z.string(), previous_status: z.string().nullable(), transaction: transactionEventView }),
    created_at: z.string(),
  })
  .meta({
    id: 'TransactionEvent',
    description:
      'One SSE event: `id` = stream sequence, `event` = type, `data` = this object. A large `input` or `result_payload` is left out (see `omitted_fields`); GET the transaction for it.',
  });

/**
 * Sent once instead of the events a resumed stream asked for when the retention job has deleted
 * them: the client reads the current state, and the stream goes on after `resumed_after`.
 */
export const tooOldEvent = z
  .object({
    code: z.literal('too_old'),
    message: z.string(),
    requested_after: z.string().meta({ description: 'The Last-Event-ID (or start) the stream was asked to resume after' }),
    resumed_after: z.string().meta({ description: "The sequence the stream goes on after; also this event's `id`, so a reconnect resumes there" }),
    retention_hours: z.number().meta({ description: 'How long published events are kept (OUTBOX_RETENTION_HOURS)' }),
    current_state: z.string().meta({ description: 'Where to read the current state: the transaction, the list of transactions, or the list of tasks' }),
  })
  .meta({ id: 'StreamTooOld', description: 'SSE event `too_old`: the requested position is older than the retention window' });

const streamItem = z.union([streamEvent, tooOldEvent]);

export const lastEventQuery = z.object({ last_event_id: z.string().optional().meta({ description: 'Alternative to the Last-Event-ID header' }) });

/**
 * Subscribers of one stream receive the same event with the same sequence: the frame is built
 * once per (event, sequence) and shared, instead of one copy per subscriber.
 */
const frames = new WeakMap<object, Map<string, string>>();
function sharedFrame(item: StreamEvent<{ type: string }>): string {
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

type Opener<E extends { type: string }> = (principal: Principal, afterSequence: string | undefined, listener: StreamListener<E>) => Promise<Subscription>;

function tooOldFrame(gap: { requestedAfter: string; resumedAfter: string }, retentionHours: number, currentState: string): string {
  const data: z.infer<typeof tooOldEvent> = {
    code: 'too_old',
    message: `the stream position is older than the retention window (${retentionHours} hours) and the events after it were deleted; read the current state at current_state, this stream goes on from here`,
    requested_after: gap.requestedAfter,
    resumed_after: gap.resumedAfter,
    retention_hours: retentionHours,
    current_state: currentState,
  };
  return frame(JSON.stringify(data), gap.resumedAfter, 'too_old');
}

/**
 * Serves one event stream over SSE, with the caps, Last-Event-ID and too_old rules every stream of
 * the product shares: the transactions' here, the tasks' in rest/routes/tasks.ts.
 */
export async function serveEventStream<E extends { type: string }>(
  input: RouteInput<unknown, { last_event_id?: string }, unknown>,
  engine: Engine,
  currentState: string,
  open: Opener<E>,
) {
  const afterSequence = parseLastEventId(input.request.get('last-event-id') ?? input.query.last_event_id);
  if (afterSequence === null) {
    throw new AppError('validation_error', 'invalid Last-Event-ID', { errors: [{ path: 'header.Last-Event-ID', message: 'must be a sequence number' }] });
  }
  // Subscribing first means a 4040 is still answered as an envelope, before any stream starts.
  let stream: SseStream | null = null;
  const early: string[] = [];
  const send = (text: string) => (stream ? stream.sendFrame(text) : (early.push(text), true));
  // A subscription may end before the stream opens; it is then closed right after opening.
  let ended = false;
  const end = () => {
    ended = true;
    stream?.close();
  };
  // A stream over the caps is refused (4290) before it subscribes, so it costs nothing. A
  // revocation of its API key ends it, even one heard before it got here (refuseIfRevokedSince).
  const release = engine.admission.sseStreams.open(input.principal!, end);
  let subscription: Subscription;
  try {
    await engine.identity.refuseIfRevokedSince(input.principal!);
    subscription = await open(input.principal!, afterSequence, {
      onEvent: (item) => send(sharedFrame(item)),
      onTooOld: (gap) => void send(tooOldFrame(gap, engine.dependencies.config.OUTBOX_RETENTION_HOURS, currentState)),
      onEnd: end,
    });
  } catch (error) {
    release();
    throw error;
  }
  stream = openSse(input.response, () => {
    release();
    subscription.close();
  });
  for (const text of early) stream.sendFrame(text);
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- ended is set by the end callback, which may have run during the awaits above
  if (ended) stream.close();
  return handled;
}

export const streamRoutes = (engine: Engine) => [
  route({
    method: 'get',
    path: '/api/v1/transactions/events',
    tag: 'streams',
    auth: 'user',
    rateLimits: ['streamOpensPerCredential', 'streamOpensPerApiKey'],
    rawResponse: { contentType: 'text/event-stream' },
    summary: "Server-sent events for all of the caller's transactions (resume with Last-Event-ID)",
    query: lastEventQuery,
    response: streamItem,
    handler: (input) =>
      serveEventStream(input, engine, '/api/v1/transactions', (principal, afterSequence, listener) =>
        engine.streams.subscribeUser(principal, { afterSequence }, listener),
      ),
  }),
  route({
    method: 'get',
    path: '/api/v1/transactions/:tx_id/events',
    tag: 'streams',
    auth: 'user',
    errors: [4040],
    rateLimits: ['streamOpensPerCredential', 'streamOpensPerApiKey'],
    rawResponse: { contentType: 'text/event-stream' },
    summary: 'Server-sent events for one transaction, from its creation on (resume with Last-Event-ID)',
    params: transactionIdParams,
    query: lastEventQuery,
    response: streamItem,
    handler: (input) =>
      serveEventStream(input, engine, `/api/v1/transactions/${input.params.tx_id}`, (principal, afterSequence, listener) =>
        engine.streams.subscribeTransaction(principal, input.params.tx_id, { afterSequence }, listener),
      ),
  }),
];
