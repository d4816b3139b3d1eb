import { z } from 'zod';
import type { Principal } from '../../src/engine/common/index.ts';
import type { Engine } from '../../src/engine/index.ts';
import { AppError } from '../../src/errors.ts';
import { eventJson } from '../../src/events/event-json.ts';
import type { PublishedEvent } from '../../src/events/publisher.ts';
import type { PublishedTaskEvent } from '../../src/events/task-feed.ts';
import { SseStream, answerStreamHead, frame, parseLastEventId } from '../../src/events/sse.ts';
import type { StreamEvent, StreamListener, Subscription } from '../../src/events/stream-types.ts';
import type { ServerResponse } from 'node:http';
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
    buyer_user_id: z.string(),
    seller_user_id: z.string(),
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

/** What an event stream sends: a transaction's events or a recipient's task events. */
type StreamedEvent = PublishedEvent | PublishedTaskEvent;

type Opener<E extends StreamedEvent> = (principal: Principal, afterSequence: string | undefined, listener: StreamListener<E>) => Promise<Subscription>;

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
 * One open event stream: the SSE response and the listener of its subscription in one object,
 * with no closure of its own. Events that arrive while the stream is being set up (the
 * subscription comes first, so that a 4040 is still an envelope) wait in `early`.
 */
class EventStream<E extends StreamedEvent> extends SseStream implements StreamListener<E> {
  private early: string[] | null = [];
  private endWhenOpen = false;
  private opened: Promise<void> | null = null;
  private resolveOpened: (() => void) | null = null;
  subscription: Subscription | null = null;
  release: (() => void) | null = null;

  constructor(
    response: ServerResponse,
    private readonly currentState: string,
    private readonly retentionHours: number,
  ) {
    super(response);
  }

  /**
   * Every subscriber of a stream gets the same StreamEvent for an event: the first one to send it
   * builds the frame, and the others write that same string.
   */
  onEvent(item: StreamEvent<E>): boolean {
    return this.write((item.sseFrame ??= frame(eventJson(item.event), item.sequence, item.event.type)));
  }

  onTooOld(gap: { requestedAfter: string; resumedAfter: string }) {
    this.write(tooOldFrame(gap, this.retentionHours, this.currentState));
  }

  /** The subscription ended (shutdown, error), or the credential did (revoked, expired). */
  onEnd() {
    if (this.early) this.endWhenOpen = true;
    else this.close();
  }

  /** Until the stream is open, events from the database wait for it rather than pile up in `early`. */
  override ready(): Promise<void> | null {
    if (this.early === null) return super.ready();
    return (this.opened ??= new Promise((resolve) => (this.resolveOpened = resolve)));
  }

  private write(text: string): boolean {
    if (this.early) {
      this.early.push(text);
      return true;
    }
    return this.sendFrame(text);
  }

  /** Starts the response and sends what came early; a subscription that ended meanwhile closes it. */
  open() {
    this.start();
    const early = this.early ?? [];
    this.early = null;
    this.resolveOpened?.();
    this.opened = this.resolveOpened = null;
    for (const text of early) if (!this.sendFrame(text)) return;
    if (this.endWhenOpen) this.close();
  }

  protected override whenClosed() {
    this.release?.();
    this.subscription?.close();
  }
}

/**
 * Serves one event stream over SSE, with the caps, Last-Event-ID and too_old rules every stream of
 * the product shares: the transactions' here, the tasks' in rest/routes/tasks.ts.
 */
export async function serveEventStream<E extends StreamedEvent>(
  input: RouteInput<unknown, { last_event_id?: string }, unknown>,
  engine: Engine,
  currentState: string,
  open: Opener<E>,
) {
  const header = input.request.get('last-event-id');
  const afterSequence = parseLastEventId(header ?? input.query.last_event_id);
  if (afterSequence === null) {
    const path = header === undefined ? 'query.last_event_id' : 'header.Last-Event-ID';
    throw new AppError('validation_error', 'invalid Last-Event-ID', { errors: [{ path, message: 'must be a sequence number' }] });
  }
  const principal = input.principal!;
  const stream = new EventStream<E>(input.response, currentState, engine.dependencies.config.OUTBOX_RETENTION_HOURS);
  // A stream over the caps is refused (4290) before it subscribes, so it costs nothing. A
  // revocation of its API key ends it, even one heard before it got here (refuseIfRevokedSince).
  const release = engine.admission.sseStreams.open(principal, () => stream.onEnd());
  try {
    await engine.identity.refuseIfRevokedSince(principal);
    // Subscribing first means a 4040 is still answered as an envelope, before any stream starts.
    stream.subscription = await open(principal, afterSequence, stream);
  } catch (error) {
    release();
    throw error;
  }
  if (input.request.method === 'HEAD') {
    // Asked and checked as GET is (credentials, caps, who may see it), answered without the stream.
    stream.subscription.close();
    release();
    answerStreamHead(input.response);
    return handled;
  }
  stream.release = release;
  // The request's routing is over: the router's continuation need not live as long as the stream.
  input.request.next = undefined;
  stream.open();
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
