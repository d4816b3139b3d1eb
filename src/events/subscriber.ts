import type { PublishedEvent } from './publisher.ts';
import { StreamEvent, type StreamListener } from './stream-types.ts';

/**
 * One subscription's delivery state. Whatever order events arrive in (live from the bus, or
 * fetched from the outbox), the listener sees each sequence number exactly once and in order:
 * older ones are dropped, early ones wait while the gap before them is fetched.
 *
 * A subscriber is kept for as long as its stream is open, possibly by the ten thousand, so it is
 * one small object: what it shares with every subscriber of its kind (how to read the outbox,
 * where subscribers are registered) is in its `channel`, its access rule is a shared function
 * given its `viewer`, and its pending events and work queue exist only while a gap is filled.
 */
export interface SubscriberSource<E = PublishedEvent> {
  /** The event's position in the stream `key` (a transaction, or a user whose stream it is). */
  sequenceOf(event: E, key: string): bigint;
  /** Events of stream `key` strictly after `after`, in sequence order, at most `limit` of them. */
  fetchAfter(key: string, after: bigint, limit: number): Promise<E[]>;
  /** The stream's latest sequence, to tell "up to date" from "everything after it was deleted". */
  headSequence?(key: string): Promise<bigint>;
}

/** What every subscriber of one kind shares: how to read the outbox, and the index of subscribers by stream. */
export interface SubscriberChannel<E = PublishedEvent> {
  source: SubscriberSource<E>;
  index: Map<string, Set<Subscriber<E>>>;
}

/** An access rule: whether `viewer` may see `event`. Events it may not see still advance the position. */
export type Visibility<E, V = never> = (event: E, viewer: V) => boolean;

export interface SubscriberLimits {
  pendingEventsMax: number;
  catchUpBatchSize: number;
}

export class Subscriber<E = PublishedEvent> {
  /** Live events that arrived ahead of a gap, by position; null while there is none (nearly always). */
  private pending: Map<bigint, StreamEvent<E>> | null = null;
  /** Work that waits on the database (catch-up), in order; null while nothing waits. */
  private queue: Promise<void> | null = null;
  private queuedTasks = 0;
  private catchUpQueued = false;
  /** `last` is a position of the stream (not one the client named): see upToDatePosition. */
  private positionIsReal = false;
  ended = false;

  constructor(
    private last: bigint,
    private readonly channel: SubscriberChannel<E>,
    /** The stream: a transaction id or a user id, the key of `channel.index`. */
    private readonly key: string,
    private readonly listener: StreamListener<E>,
    private readonly limits: SubscriberLimits,
    private readonly visible: Visibility<E, unknown> | null = null,
    private readonly viewer: unknown = null,
  ) {}

  /**
   * The position, while it is known to be a real one and nothing waits for a gap or is being
   * fetched: every event after it will reach this subscriber live, so a new stream of the same
   * user may start there (hub.ts startOf). A position the client chose (Last-Event-ID) may lie
   * beyond the head, where a stream started from it would wait for events that do not exist yet:
   * it becomes real only once an event is delivered or the head was read.
   */
  get upToDatePosition(): bigint | null {
    return this.positionIsReal && !this.ended && this.pending === null && this.queuedTasks === 0 ? this.last : null;
  }

  /** The starting position was read from the head, or from a stream whose position was real. */
  startsAtRealPosition() {
    this.positionIsReal = true;
  }

  /** A live event from the bus, wrapped once for every subscriber of this stream. */
  offer(item: StreamEvent<E>) {
    if (this.ended) return;
    const sequence = item.position;
    if (sequence <= this.last) return;
    if (sequence === this.last + 1n && this.pending === null) {
      // The common case, the next event with nothing in flight, is delivered at once: no
      // promise per subscriber per event on the fan-out hot path.
      if (this.queuedTasks === 0) this.deliverInOrder(item);
      else this.enqueue(async () => this.deliverInOrder(item) && (await this.drainPending(true)));
      return;
    }
    this.pending ??= new Map();
    this.pending.set(sequence, item);
    if (this.pending.size > this.limits.pendingEventsMax) {
      this.end('slow_consumer');
      return;
    }
    this.catchUp();
  }

  /**
   * Fetches everything after the current position from the database, then drains what waited,
   * at the pace the listener takes it (ready()). `fromRequestedPosition`: the position is one the
   * client asked for (Last-Event-ID, or a transaction's start), so an empty answer is checked
   * against the stream's head, in case the retention job deleted everything after it.
   */
  catchUp(fromRequestedPosition = false) {
    // One queued catch-up fetches everything up to date; a second one would find nothing new.
    if (this.catchUpQueued) return;
    this.catchUpQueued = true;
    this.enqueue(async () => {
      this.catchUpQueued = false;
      for (let first = true; ; first = false) {
        const batch = await this.fetchAfter(this.last, this.limits.catchUpBatchSize);
        if (first) await this.skipDeleted(batch, fromRequestedPosition);
        for (const item of batch) if (!this.deliverInOrder(item) || !(await this.paced())) return;
        if (batch.length < this.limits.catchUpBatchSize) break;
      }
      // No re-fetch from here: if the gap is still open, the next live event triggers one.
      await this.drainPending(false);
    });
  }

  /** Waits while the listener cannot take more; false once the subscription is over. */
  private async paced(): Promise<boolean> {
    const wait = this.listener.ready?.();
    if (wait) await wait;
    return !this.ended;
  }

  private async fetchAfter(after: bigint, limit: number): Promise<StreamEvent<E>[]> {
    const { source } = this.channel;
    return (await source.fetchAfter(this.key, after, limit)).map((event) => new StreamEvent(event, source.sequenceOf(event, this.key)));
  }

  /**
   * The outbox never has a gap of its own (a sequence is bumped and its row written in one
   * statement, under a lock the next bump waits for), so events missing right after the position
   * were deleted by the retention job. The listener is told once, and the stream goes on from the
   * oldest event still kept (or the head).
   */
  private async skipDeleted(batch: StreamEvent<E>[], checkHead: boolean) {
    let resumeAfter = this.gapBefore(batch[0]);
    const { source } = this.channel;
    if (!batch[0] && checkHead && source.headSequence) {
      const head = await source.headSequence(this.key);
      if (head > this.last) {
        // An event may have been committed between the fetch and the head's read: look again.
        // What the head counts was committed before it was read, so if nothing is there now,
        // it was deleted.
        const [oldest] = await this.fetchAfter(this.last, 1);
        resumeAfter = oldest ? this.gapBefore(oldest) : head;
      }
    }
    if (resumeAfter === null || this.ended) return;
    const requestedAfter = this.last;
    this.last = resumeAfter;
    this.positionIsReal = true;
    this.listener.onTooOld?.({ requestedAfter: String(requestedAfter), resumedAfter: String(resumeAfter) });
  }

  /** The position to go on from when `oldest`, the first event after the position, is not the next one. */
  private gapBefore(oldest: StreamEvent<E> | undefined): bigint | null {
    if (!oldest) return null;
    return oldest.position > this.last + 1n ? oldest.position - 1n : null;
  }

  /** Ends the subscription without telling the listener (it asked); the stream is no longer indexed. */
  close() {
    if (this.ended) return;
    this.ended = true;
    this.pending = null;
    const { index } = this.channel;
    const set = index.get(this.key);
    if (!set) return;
    set.delete(this);
    if (set.size === 0) index.delete(this.key);
  }

  private enqueue(work: () => Promise<unknown>) {
    this.queuedTasks++;
    this.queue = (this.queue ?? Promise.resolve())
      .then(async () => {
        if (!this.ended) await work();
      })
      .catch(() => this.end('error'))
      .finally(() => {
        // The last piece of work leaves no promise behind.
        if (--this.queuedTasks === 0) this.queue = null;
      });
  }

  /** Hands the event to the listener if it is the next one; false once the subscription is over. */
  private deliverInOrder(item: StreamEvent<E>): boolean {
    const sequence = item.position;
    if (this.ended || sequence <= this.last) return !this.ended;
    this.last = sequence;
    this.positionIsReal = true;
    this.pending?.delete(sequence);
    if ((this.visible === null || this.visible(item.event, this.viewer)) && !this.listener.onEvent(item)) {
      this.end('slow_consumer');
      return false;
    }
    return true;
  }

  /** Delivers the live events that waited for a gap, in order and paced; fetches again if a gap remains. */
  private async drainPending(fetchIfGap: boolean): Promise<boolean> {
    for (let next = this.pending?.get(this.last + 1n); next; next = this.pending?.get(this.last + 1n)) {
      if (!this.deliverInOrder(next) || !(await this.paced())) return false;
    }
    const { pending } = this;
    if (pending === null) return !this.ended;
    for (const sequence of pending.keys()) if (sequence <= this.last) pending.delete(sequence);
    if (pending.size === 0) this.pending = null;
    // Something newer than the next expected event is still waiting: the gap must be fetched.
    else if (fetchIfGap && !this.ended) this.catchUp();
    return !this.ended;
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
