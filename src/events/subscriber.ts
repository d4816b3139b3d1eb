import type { PublishedEvent } from './publisher.ts';
import type { StreamEvent, StreamListener } from './stream-types.ts';

/**
 * One subscription's delivery state. Whatever order events arrive in (live from the bus, or
 * fetched from the outbox), the listener sees each sequence number exactly once and in order:
 * older ones are dropped, early ones wait while the gap before them is fetched.
 */
export interface SubscriberSource<E = PublishedEvent> {
  sequenceOf(event: E): bigint;
  /** Events strictly after `after`, in sequence order, at most `limit` of them. */
  fetchAfter(after: bigint, limit: number): Promise<E[]>;
  /** Events the listener must not see (another space) still advance the position. */
  visible(event: E): boolean;
  /** The stream's latest sequence, to tell "up to date" from "everything after it was deleted". */
  headSequence?(): Promise<bigint>;
}

export interface SubscriberLimits {
  pendingEventsMax: number;
  catchUpBatchSize: number;
}

export class Subscriber<E = PublishedEvent> {
  private pending = new Map<bigint, E>();
  private queue: Promise<void> = Promise.resolve();
  private queuedTasks = 0;
  private catchUpQueued = false;
  ended = false;

  constructor(
    private last: bigint,
    private readonly source: SubscriberSource<E>,
    private readonly listener: StreamListener<E>,
    private readonly limits: SubscriberLimits,
    private readonly onEnded: (subscriber: Subscriber<E>) => void,
  ) {}

  /** A live event from the bus. */
  offer(event: E) {
    if (this.ended) return;
    const sequence = this.source.sequenceOf(event);
    if (sequence <= this.last) return;
    if (sequence === this.last + 1n && this.pending.size === 0) {
      // The common case, the next event with nothing in flight, is delivered at once: no
      // promise per subscriber per event on the fan-out hot path.
      if (this.queuedTasks === 0) this.deliverInOrder(event);
      else this.enqueue(async () => this.deliverInOrder(event));
      return;
    }
    this.pending.set(sequence, event);
    if (this.pending.size > this.limits.pendingEventsMax) {
      this.end('slow_consumer');
      return;
    }
    this.catchUp();
  }

  /**
   * Fetches everything after the current position from the database, then drains what waited.
   * `fromRequestedPosition`: the position is one the client asked for (Last-Event-ID, or a
   * transaction's start), so an empty answer is checked against the stream's head, in case the
   * retention job deleted everything after it.
   */
  catchUp(fromRequestedPosition = false) {
    // One queued catch-up fetches everything up to date; a second one would find nothing new.
    if (this.catchUpQueued) return;
    this.catchUpQueued = true;
    this.enqueue(async () => {
      this.catchUpQueued = false;
      for (let first = true; ; first = false) {
        const batch = await this.source.fetchAfter(this.last, this.limits.catchUpBatchSize);
        if (first) await this.skipDeleted(batch, fromRequestedPosition);
        for (const event of batch) if (!this.deliverInOrder(event)) return;
        if (batch.length < this.limits.catchUpBatchSize) break;
      }
      // No re-fetch from here: if the gap is still open, the next live event triggers one.
      this.drainPending(false);
    });
  }

  /**
   * The outbox never has a gap of its own (a sequence is bumped and its row written in one
   * statement, under a lock the next bump waits for), so events missing right after the position
   * were deleted by the retention job. The listener is told once, and the stream goes on from the
   * oldest event still kept (or the head).
   */
  private async skipDeleted(batch: E[], checkHead: boolean) {
    let resumeAfter = this.gapBefore(batch[0]);
    if (!batch[0] && checkHead && this.source.headSequence) {
      const head = await this.source.headSequence();
      if (head > this.last) {
        // An event may have been committed between the fetch and the head's read: look again.
        // What the head counts was committed before it was read, so if nothing is there now,
        // it was deleted.
        const [oldest] = await this.source.fetchAfter(this.last, 1);
        resumeAfter = oldest ? this.gapBefore(oldest) : head;
      }
    }
    if (resumeAfter === null || this.ended) return;
    const requestedAfter = this.last;
    this.last = resumeAfter;
    this.listener.onTooOld?.({ requestedAfter: String(requestedAfter), resumedAfter: String(resumeAfter) });
  }

  /** The position to go on from when `oldest`, the first event after the position, is not the next one. */
  private gapBefore(oldest: E | undefined): bigint | null {
    if (!oldest) return null;
    const sequence = this.source.sequenceOf(oldest);
    return sequence > this.last + 1n ? sequence - 1n : null;
  }

  close() {
    this.ended = true;
    this.pending.clear();
    this.onEnded(this);
  }

  private enqueue(work: () => Promise<unknown>) {
    this.queuedTasks++;
    this.queue = this.queue
      .then(async () => {
        if (!this.ended) await work();
      })
      .catch(() => this.end('error'))
      .finally(() => {
        this.queuedTasks--;
      });
  }

  private deliverInOrder(event: E): boolean {
    const sequence = this.source.sequenceOf(event);
    if (this.ended || sequence <= this.last) return !this.ended;
    this.last = sequence;
    this.pending.delete(sequence);
    if (this.source.visible(event) && !this.listener.onEvent({ sequence: String(sequence), event } satisfies StreamEvent<E>)) {
      this.end('slow_consumer');
      return false;
    }
    this.drainPending(true);
    return !this.ended;
  }

  private drainPending(fetchIfGap: boolean) {
    for (let next = this.pending.get(this.last + 1n); next && !this.ended; next = this.pending.get(this.last + 1n)) {
      this.deliverInOrder(next);
    }
    for (const sequence of this.pending.keys()) if (sequence <= this.last) this.pending.delete(sequence);
    // Something newer than the next expected event is still waiting: the gap must be fetched.
    if (fetchIfGap && this.pending.size > 0 && !this.ended) this.catchUp();
  }

  private end(reason: 'slow_consumer' | 'error' | 'shutdown') {
    if (this.ended) return;
    this.close();
    this.listener.onEnd?.(reason);
  }

  shutdown() {
    this.end('shutdown');
  }
}
