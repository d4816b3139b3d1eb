import type { PublishedEvent } from './publisher.ts';

/**
 * The contract between the fan-out (src/events) and the transports (REST SSE, JSON-RPC over SSE
 * and WebSocket). A subscription delivers events in sequence order, exactly once: first what the
 * database holds after `afterSequence`, then live events, with gaps filled from the database.
 */
export type StreamTarget = { kind: 'transaction'; transactionId: string } | { kind: 'user'; userId: string };

export interface StreamEvent<E = PublishedEvent> {
  /** The position in this stream: transaction_sequence for a transaction stream, the owner's sequence for a user stream. */
  sequence: string;
  event: E;
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
