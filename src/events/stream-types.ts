import type { PublishedEvent } from './publisher.ts';

/**
 * The contract between the fan-out (src/events) and the transports (REST SSE, JSON-RPC over SSE
 * and WebSocket). A subscription delivers events in sequence order, exactly once: first what the
 * database holds after `afterSequence`, then live events, with gaps filled from the database.
 */
export type StreamTarget = { kind: 'transaction'; transactionId: string } | { kind: 'user'; userId: string };

/**
 * One event at one position of a stream. A live event is wrapped once per position (the
 * transaction's, the buyer's, the seller's, the recipient's) and the same object is handed to
 * every local subscriber of that stream, so the fan-out allocates nothing per subscriber.
 */
export class StreamEvent<E = PublishedEvent> {
  /** The position as text: the SSE `id`, what Last-Event-ID names. */
  readonly sequence: string;
  /**
   * The REST SSE frame of this event at this position, built by the first subscriber that sends
   * it and written as it is by the others: one frame per event, not one per subscriber.
   */
  sseFrame: string | undefined = undefined;

  constructor(
    readonly event: E,
    /** The position in this stream: transaction_sequence for a transaction stream, the owner's sequence for a user stream. */
    readonly position: bigint,
  ) {
    this.sequence = String(position);
  }
}

export interface StreamListener<E = PublishedEvent> {
  /** Called once per event, in order. Return false when the consumer cannot keep up: the subscription then ends with reason 'slow_consumer'. */
  onEvent(event: StreamEvent<E>): boolean;
  /**
   * Called when the events right after the stream's position were deleted by the retention job:
   * the stream goes on after `resumedAfter`, and the client should read the current state.
   */
  onTooOld?(gap: { requestedAfter: string; resumedAfter: string }): void;
  /** Called once when the subscription ends for a reason other than close(). */
  onEnd?(reason: 'slow_consumer' | 'shutdown' | 'error'): void;
  /**
   * null when the consumer can take more now; otherwise a promise that settles once it can (or is
   * gone). Events read from the database (a resumed stream far behind) wait on it between events,
   * so they go at the pace the client reads instead of in one burst that the bound on a
   * subscriber's unsent output (which cuts off a client that stops reading) would take for a slow client.
   */
  ready?(): Promise<void> | null;
}

export interface Subscription {
  close(): void;
}

export interface SubscribeOptions {
  /**
   * Deliver events strictly after this sequence. For a transaction stream, undefined means from
   * the beginning (the whole history). For a user stream, undefined means from now on.
   */
  afterSequence?: string;
}
