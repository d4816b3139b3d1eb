import { describe, expect, it } from 'vitest';
import type { PublishedEvent } from '../../src/events/publisher.ts';
import { StreamEvent } from '../../src/events/stream-types.ts';
import { Subscriber, type SubscriberChannel } from '../../src/events/subscriber.ts';

/**
 * The subscriber's ordering rules, fed directly: the outbox here is an in-memory list standing in
 * for the table, so every interleaving of live and fetched events can be tried.
 */
const published = (sequence: number): PublishedEvent => ({
  id: String(sequence),
  transaction_id: 't',
  transaction_sequence: sequence,
  buyer_user_id: 'b',
  buyer_sequence: String(sequence),
  seller_user_id: 's',
  seller_sequence: String(sequence),
  type: 'transaction.frozen',
  data: {},
  created_at: new Date(0).toISOString(),
});
/** A live event as the hub hands it over. */
const event = (sequence: number) => new StreamEvent(published(sequence), BigInt(sequence));

function harness(stored: number[], options: { acceptUntil?: number; pendingEventsMax?: number; batchSize?: number } = {}) {
  const delivered: string[] = [];
  const ended: string[] = [];
  let fetches = 0;
  const channel: SubscriberChannel = {
    source: {
      sequenceOf: (item) => BigInt(item.transaction_sequence),
      fetchAfter: async (_key, after, limit) => {
        fetches++;
        return stored
          .filter((sequence) => BigInt(sequence) > after)
          .slice(0, limit)
          .map(published);
      },
    },
    index: new Map(),
  };
  const subscriber = new Subscriber(
    0n,
    channel,
    't',
    {
      onEvent: (item: StreamEvent) => {
        delivered.push(item.sequence);
        return options.acceptUntil === undefined || delivered.length < options.acceptUntil;
      },
      onEnd: (reason) => ended.push(reason),
    },
    { pendingEventsMax: options.pendingEventsMax ?? 100, catchUpBatchSize: options.batchSize ?? 2 },
  );
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
  return { subscriber, delivered, ended, settle, fetches: () => fetches };
}

describe('a stream subscriber', () => {
  it('delivers history in batches, then live events, each once and in order', async () => {
    const { subscriber, delivered, settle } = harness([1, 2, 3, 4, 5]);
    subscriber.catchUp();
    subscriber.offer(event(4)); // arrives live while history is still loading
    subscriber.offer(event(6));
    await settle();
    expect(delivered).toEqual(['1', '2', '3', '4', '5', '6']);
  });

  it('waits for a gap to be fetched before delivering a later event', async () => {
    const { subscriber, delivered, settle, fetches } = harness([1, 2, 3], { batchSize: 10 });
    subscriber.offer(event(1));
    subscriber.offer(event(3)); // 2 was lost on the bus
    await settle();
    expect(delivered).toEqual(['1', '2', '3']);
    expect(fetches()).toBe(1);
    subscriber.offer(event(2)); // the late copy of 2 is a duplicate now
    await settle();
    expect(delivered).toEqual(['1', '2', '3']);
  });

  it('ends a consumer that cannot keep up instead of buffering without bound', async () => {
    const slow = harness([1, 2, 3, 4], { acceptUntil: 2 });
    slow.subscriber.catchUp();
    await slow.settle();
    expect(slow.delivered).toEqual(['1', '2']);
    expect(slow.ended).toEqual(['slow_consumer']);

    const flooded = harness([], { pendingEventsMax: 3 });
    for (const sequence of [5, 6, 7, 8]) flooded.subscriber.offer(event(sequence));
    await flooded.settle();
    expect(flooded.ended).toEqual(['slow_consumer']);
  });

  it('sends what it reads from the database at the pace the listener takes it', async () => {
    const delivered: string[] = [];
    let release: () => void = () => {};
    const channel: SubscriberChannel = {
      source: { sequenceOf: (item) => BigInt(item.transaction_sequence), fetchAfter: async (_key, after) => [1, 2, 3].filter((n) => n > after).map(published) },
      index: new Map(),
    };
    const listener = {
      onEvent: (item: StreamEvent) => delivered.push(item.sequence) > 0,
      // Busy after every event, until the test lets it go on.
      ready: () => new Promise<void>((resolve) => (release = resolve)),
    };
    const subscriber = new Subscriber(0n, channel, 't', listener, { pendingEventsMax: 100, catchUpBatchSize: 10 });
    subscriber.catchUp();
    await expect.poll(() => delivered).toEqual(['1']);
    release();
    await expect.poll(() => delivered).toEqual(['1', '2']);
    release();
    await expect.poll(() => delivered).toEqual(['1', '2', '3']);
  });

  it('delivers nothing after close', async () => {
    const { subscriber, delivered, settle } = harness([1, 2]);
    subscriber.close();
    subscriber.catchUp();
    subscriber.offer(event(1));
    await settle();
    expect(delivered).toEqual([]);
  });
});
