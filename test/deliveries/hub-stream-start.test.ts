import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.ts';
import { createInProcessBus, type EventBus } from '../../src/events/bus.ts';
import { createEventHub } from '../../src/events/hub.ts';
import { eventsChannel } from '../../src/events/publisher.ts';
import type { StreamEvent } from '../../src/events/stream-types.ts';
import { limits } from '../../src/limits.ts';
import { createLogger } from '../../src/logger.ts';
import type { OutboxRow } from '../../src/store/outbox.ts';

/**
 * Where a user's stream opened without Last-Event-ID starts: at the head of the user's stream, with
 * no read of the outbox unless the bus came back while the head was being read (what it lost
 * meanwhile is then fetched). The database here is a stand-in that counts the outbox reads and
 * answers the head when the test lets it.
 */
const user = '00000000-0000-4000-8000-000000000001';
const other = '00000000-0000-4000-8000-000000000002';

function row(sequence: number): OutboxRow {
  return {
    id: String(100 + sequence),
    transaction_id: `00000000-0000-4000-8000-0000000001${String(sequence).padStart(2, '0')}`,
    transaction_sequence: 1,
    buyer_user_id: user,
    buyer_sequence: sequence,
    seller_user_id: other,
    seller_sequence: sequence,
    event_type: 'transaction.pending_freeze',
    payload: {},
    created_at: new Date(0),
  } as unknown as OutboxRow;
}

function harness(head: number, stored: number[]) {
  /** What the database holds; a test may commit more "on another instance" (not published here). */
  const committed = { head, stored, outboxRead: Promise.resolve() };
  let releaseHead: () => void = () => {};
  const headRead = new Promise<void>((resolve) => (releaseHead = resolve));
  let outboxReads = 0;
  let headReads = 0;
  // Heads are read together (events/sources.ts batchedHeads): `whereIn(...).select(...)`.
  const select = async () => {
    headReads++;
    await headRead;
    return [{ owner_user_id: user, last_sequence: String(committed.head) }];
  };
  // One stream's own head read (a resumed stream that found nothing after its position): `where(...).first(...)`.
  const first = async () => ({ last_sequence: String(committed.head) });
  const db = Object.assign(() => ({ whereIn: () => ({ select }), where: () => ({ first }) }), {
    raw: async (_sql: string, bindings: unknown[]) => {
      outboxReads++;
      await committed.outboxRead;
      const after = Number(bindings[1]);
      return { rows: committed.stored.filter((sequence) => sequence > after).map(row) };
    },
  }) as unknown as Database;
  const inner = createInProcessBus();
  let reconnected: () => void = () => {};
  const connection = { up: true };
  const bus: EventBus = { ...inner, onReconnect: (handler) => (reconnected = handler), listening: () => connection.up };
  const hub = createEventHub(bus, db, createLogger('silent'));
  const received: string[] = [];
  const listener = { onEvent: (item: StreamEvent) => received.push(item.sequence) > 0 };
  /** A user's stream opened from the head, the head read let through. */
  const openAtHead = async (onEvent: typeof listener = listener) => {
    const opening = hub.subscribe({ kind: 'user', userId: user }, {}, onEvent);
    releaseHead();
    return opening;
  };
  const reconnect = () => {
    connection.up = true;
    reconnected();
  };
  return {
    hub,
    bus,
    committed,
    connection,
    releaseHead,
    openAtHead,
    reconnect,
    outboxReads: () => outboxReads,
    headReads: () => headReads,
    received,
    listener,
  };
}

/** A listener of its own, for a second stream of the same user. */
function recorder() {
  const received: string[] = [];
  return { received, listener: { onEvent: (item: StreamEvent) => received.push(item.sequence) > 0 } };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

const message = (sequence: number) => JSON.stringify({ ...row(sequence), type: 'transaction.pending_freeze', data: {}, created_at: new Date(0).toISOString() });

describe("a user's stream opened without Last-Event-ID", () => {
  it('starts at the head without reading the outbox, and gets the events after it live', async () => {
    const { hub, bus, releaseHead, outboxReads, received, listener } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const opening = hub.subscribe({ kind: 'user', userId: user }, {}, listener);
    releaseHead();
    const subscription = await opening;
    await bus.publish(eventsChannel, message(6));
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual(['6']);
    expect(outboxReads()).toBe(0);
    subscription.close();
    await hub.stop();
  });

  it('fetches what the bus lost when the bus came back while the head was being read', async () => {
    // Event 6 was committed after the head was read and its message lost with the bus connection.
    const { hub, releaseHead, reconnect, outboxReads, received, listener } = harness(5, [1, 2, 3, 4, 5, 6]);
    await hub.start();
    const opening = hub.subscribe({ kind: 'user', userId: user }, {}, listener);
    reconnect();
    releaseHead();
    const subscription = await opening;
    // At once, not only at the bus's second catch-up (limits.busReconnectSecondCatchUpMs later).
    await expect.poll(() => received, { timeout: 500 }).toEqual(['6']);
    expect(outboxReads()).toBeGreaterThan(0);
    subscription.close();
    await hub.stop();
  });

  it('ends a stream still opening when the hub stops, instead of failing the stop', async () => {
    const { hub, bus, releaseHead, received, listener } = harness(5, []);
    const ends: string[] = [];
    await hub.start();
    const opening = hub.subscribe({ kind: 'user', userId: user }, {}, { ...listener, onEnd: (reason: string) => ends.push(reason) });
    await hub.stop();
    releaseHead();
    await opening;
    expect(ends).toEqual(['shutdown']);
    // It is not left registered: an event published now reaches nobody.
    await bus.publish(eventsChannel, message(6));
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([]);
  });

  it("starts beside an up-to-date stream of the same user at that stream's position, without reading the head", async () => {
    const { hub, bus, openAtHead, headReads, received } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const first = await openAtHead();
    await bus.publish(eventsChannel, message(6));
    await settle();
    const second = recorder();
    const subscription = await hub.subscribe({ kind: 'user', userId: user }, {}, second.listener);
    expect(headReads()).toBe(1);
    await bus.publish(eventsChannel, message(7));
    await settle();
    // Event 6 came before the second stream opened: only the first has it.
    expect(received).toEqual(['6', '7']);
    expect(second.received).toEqual(['7']);
    first.close();
    subscription.close();
    await hub.stop();
  });

  it('reads the head beside a stream of the same user that waits for a gap to be filled', async () => {
    // Events 6 and 7 are not in the outbox yet: the first stream holds 8 until they are.
    const { hub, bus, openAtHead, headReads, outboxReads } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const first = await openAtHead();
    await bus.publish(eventsChannel, message(8));
    await expect.poll(() => outboxReads()).toBeGreaterThan(0);
    await settle();
    const second = await hub.subscribe({ kind: 'user', userId: user }, {}, recorder().listener);
    expect(headReads()).toBe(2);
    first.close();
    second.close();
    await hub.stop();
  });

  it('reads the head while the bus is down, and from its return until its second catch-up', async () => {
    const { hub, bus, committed, connection, openAtHead, reconnect, headReads, received } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const first = await openAtHead();
    // The bus goes down, and another instance commits 6 to 8: nobody here hears of them.
    connection.up = false;
    committed.stored.push(6, 7, 8);
    committed.head = 8;
    const whileDown = recorder();
    const streams = [first, await hub.subscribe({ kind: 'user', userId: user }, {}, whileDown.listener)];
    expect(headReads()).toBe(2);
    reconnect();
    // The first stream gets what the bus lost from the outbox; the second started after it.
    await expect.poll(() => received).toEqual(['6', '7', '8']);
    // Event 9 falls between the reconnection and the resubscription, and is lost too: until the
    // second catch-up, the first stream's position (8) is not lent.
    committed.stored.push(9);
    committed.head = 9;
    const justBack = recorder();
    streams.push(await hub.subscribe({ kind: 'user', userId: user }, {}, justBack.listener));
    expect(headReads()).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, limits.busReconnectSecondCatchUpMs + 100));
    expect(received).toEqual(['6', '7', '8', '9']);
    const afterCatchUp = recorder();
    streams.push(await hub.subscribe({ kind: 'user', userId: user }, {}, afterCatchUp.listener));
    expect(headReads()).toBe(3);
    await bus.publish(eventsChannel, message(10));
    await settle();
    expect(received).toEqual(['6', '7', '8', '9', '10']);
    expect(whileDown.received).toEqual(['9', '10']);
    for (const stream of [justBack, afterCatchUp]) expect(stream.received).toEqual(['10']);
    for (const stream of streams) stream.close();
    await hub.stop();
  });

  it('lends the head a stream started at before any event reached it', async () => {
    const { hub, openAtHead, headReads } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const first = await openAtHead(recorder().listener);
    const second = await hub.subscribe({ kind: 'user', userId: user }, {}, recorder().listener);
    expect(headReads()).toBe(1);
    first.close();
    second.close();
    await hub.stop();
  });

  it('reads the head beside a stream still fetching what the bus lost after the catch-ups began', async () => {
    const { hub, bus, committed, openAtHead, reconnect, headReads, outboxReads, received } = harness(5, [1, 2, 3, 4, 5]);
    await hub.start();
    const first = await openAtHead();
    // The outbox answers slowly: the first stream's catch-up outlasts the pause after reconnection.
    let answer: () => void = () => {};
    committed.outboxRead = new Promise((resolve) => (answer = resolve));
    committed.stored.push(6);
    committed.head = 6;
    reconnect();
    await new Promise((resolve) => setTimeout(resolve, limits.busReconnectSecondCatchUpMs + 100));
    expect(outboxReads()).toBeGreaterThan(0);
    const second = recorder();
    const streams = [first, await hub.subscribe({ kind: 'user', userId: user }, {}, second.listener)];
    expect(headReads()).toBe(2);
    answer();
    await expect.poll(() => received).toEqual(['6']);
    await bus.publish(eventsChannel, message(7));
    await settle();
    expect(second.received).toEqual(['7']);
    for (const stream of streams) stream.close();
    await hub.stop();
  });

  it('lends the position a resumed stream moved to when the events after its Last-Event-ID were deleted', async () => {
    // Events 3 to 5 are gone (the retention job): a stream resumed after 2 goes on from the head.
    const { hub, headReads } = harness(5, []);
    await hub.start();
    const tooOld: string[] = [];
    const resumed = await hub.subscribe(
      { kind: 'user', userId: user },
      { afterSequence: '2' },
      {
        ...recorder().listener,
        onTooOld: (gap: { resumedAfter: string }) => tooOld.push(gap.resumedAfter),
      },
    );
    await expect.poll(() => tooOld).toEqual(['5']);
    const fromNow = await hub.subscribe({ kind: 'user', userId: user }, {}, recorder().listener);
    expect(headReads()).toBe(0);
    resumed.close();
    fromNow.close();
    await hub.stop();
  });
});
