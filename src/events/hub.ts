import type { Database } from '../db/database.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../logger.ts';
import type { EventBus } from './bus.ts';
import { rememberJson } from './event-json.ts';
import { eventsChannel, type PublishedEvent } from './publisher.ts';
import { batchedHeads, taskSource, transactionSource, userSource } from './sources.ts';
import { StreamEvent, type StreamListener, type StreamTarget, type Subscription, type SubscribeOptions } from './stream-types.ts';
import { Subscriber, type SubscriberChannel, type SubscriberLimits, type Visibility } from './subscriber.ts';
import { type PublishedTaskEvent, taskEventsChannel } from './task-feed.ts';

/**
 * Each server instance listens once on the bus per channel kind (transaction events, task events),
 * however many streams it holds, and hands every event to its own local subscribers of that
 * transaction and of its two parties. Each event is wrapped once per stream position and the
 * same object goes to every subscriber of that stream (docs/decisions/streams-and-deliveries.md
 * "Fan-out at the cost of a bare stream"). Subscribers fill gaps from the outbox table, so a lost
 * message (Redis restart, crash before publish) costs latency, never an event.
 */
const subscriberLimits: SubscriberLimits = { pendingEventsMax: limits.streamPendingEventsMax, catchUpBatchSize: limits.streamCatchUpBatchSize };

export function createEventHub(bus: EventBus, db: Database, log: Logger) {
  const transactions: SubscriberChannel<PublishedEvent> = { source: transactionSource(db), index: new Map() };
  const users: SubscriberChannel<PublishedEvent> = { source: userSource(db), index: new Map() };
  /** Task streams (docs/tasks.md "Task events"), by recipient: every task event is one recipient's. */
  const tasks: SubscriberChannel<PublishedTaskEvent> = { source: taskSource(db), index: new Map() };
  const channels = [transactions, users, tasks] as SubscriberChannel<unknown>[];
  const userHead = batchedHeads(db, 'event_streams');
  const taskHead = batchedHeads(db, 'task_event_streams');
  let stopListening: (() => Promise<void>) | null = null;
  let stopListeningToTasks: (() => Promise<void>) | null = null;
  /** Set from the bus's reconnection until its second catch-up: no stream position is lent meanwhile. */
  let lendingPaused = false;

  /** Hands the event at `position` of stream `key` to its subscribers here, wrapped once for all of them. */
  function deliver<E>(index: Map<string, Set<Subscriber<E>>>, key: string, event: E, position: string | number) {
    const subscribers = index.get(key);
    if (subscribers === undefined) return;
    const item = new StreamEvent(event, BigInt(position));
    for (const subscriber of subscribers) subscriber.offer(item);
  }

  /** Waiters for a transaction's next event (a retry waiting for an invoke's outcome), woken once. */
  const watchers = new Map<string, Set<() => void>>();

  /**
   * Resolves at the transaction's next event heard on this instance, or after `timeoutMs`,
   * whichever comes first. Registered before the caller reads the row, so an event that lands
   * between the read and the wait still wakes it; a lost message costs at most the timeout.
   */
  function nextEventOf(transactionId: string, timeoutMs: number): { arrived: Promise<void>; stop(): void } {
    let wake: () => void = () => {};
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<void>((resolve) => {
      wake = () => {
        clearTimeout(timer);
        const set = watchers.get(transactionId);
        set?.delete(wake);
        if (set?.size === 0) watchers.delete(transactionId);
        resolve();
      };
    });
    (watchers.get(transactionId) ?? watchers.set(transactionId, new Set()).get(transactionId)!).add(wake);
    timer = setTimeout(wake, timeoutMs);
    timer.unref();
    return { arrived, stop: wake };
  }

  function parse<E>(message: string, what: string): E | null {
    try {
      return JSON.parse(message) as E;
    } catch (error) {
      log.warn(`unreadable ${what} on the bus`, { error });
      return null;
    }
  }

  function onMessage(message: string) {
    // An instance that holds no streams nor waiters (one serving only API calls) need not read the event.
    if (transactions.index.size === 0 && users.index.size === 0 && watchers.size === 0) return;
    const event = parse<PublishedEvent>(message, 'event');
    if (event === null) return;
    for (const wake of [...(watchers.get(event.transaction_id) ?? [])]) wake();
    deliver(transactions.index, event.transaction_id, event, event.transaction_sequence);
    deliver(users.index, event.buyer_user_id, event, event.buyer_sequence);
    if (event.seller_user_id !== event.buyer_user_id) deliver(users.index, event.seller_user_id, event, event.seller_sequence);
  }

  function onTaskMessage(message: string) {
    if (tasks.index.size === 0) return;
    const event = parse<PublishedTaskEvent>(message, 'task event');
    if (event === null) return;
    rememberJson(event, message);
    deliver(tasks.index, event.recipient_user_id, event, event.sequence);
  }

  /**
   * After the bus connection was lost, every local subscriber fetches what it missed. Once at
   * reconnection, and once more a moment later, because the resubscription itself completes a
   * little after the connection is ready and a message can fall in between.
   */
  function catchUpEveryone() {
    for (const { index } of channels) for (const set of index.values()) for (const subscriber of set) subscriber.catchUp();
  }

  async function start() {
    if (stopListening) return;
    // This instance's own events reach its streams as they are published; the bus's copy, which
    // comes back a moment later, is then dropped by every subscriber as already seen.
    stopListening = await bus.subscribe(eventsChannel, onMessage, { ownAtOnce: true });
    stopListeningToTasks = await bus.subscribe(taskEventsChannel, onTaskMessage, { ownAtOnce: true });
    bus.onReconnect(() => {
      log.info('event bus reconnected; subscribers catch up from the outbox');
      // Until the second catch-up is under way a stream's position may lack what the bus lost,
      // so none is lent (startOf); the catch-ups then keep each stream busy until it is whole.
      lendingPaused = true;
      catchUpEveryone();
      setTimeout(() => {
        lendingPaused = false;
        catchUpEveryone();
      }, limits.busReconnectSecondCatchUpMs).unref();
    });
  }

  /**
   * Registers first and reads the starting point second, so an event committed in between is
   * either at or before the starting point (skipped) or after it (delivered): never lost. The
   * subscriber itself is the subscription (close() ends it).
   */
  async function attach<E, V>(
    channel: SubscriberChannel<E>,
    key: string,
    startingPoint: Promise<bigint> | (() => Promise<bigint>),
    listener: StreamListener<E>,
    fromRequestedPosition: boolean,
    visible: Visibility<E, V> | null,
    viewer: V | null,
  ): Promise<Subscription> {
    const early: StreamEvent<E>[] = [];
    let catchUpMissed = false as boolean;
    let stoppedWhileOpening = false as boolean;
    // Stands in while the starting point is read; a catch-up asked of it (the bus came back) is the
    // real subscriber's, and so is a shutdown (the hub stopped): that stream ends as soon as it opens.
    const placeholder = {
      offer: (item: StreamEvent<E>) => early.push(item),
      catchUp: () => (catchUpMissed = true),
      shutdown: () => (stoppedWhileOpening = true),
    } as unknown as Subscriber<E>;
    const { index } = channel;
    const set = index.get(key) ?? new Set<Subscriber<E>>();
    index.set(key, set);
    set.add(placeholder);
    let subscriber: Subscriber<E>;
    try {
      const start = await (typeof startingPoint === 'function' ? startingPoint() : startingPoint);
      subscriber = new Subscriber<E>(start, channel, key, listener, subscriberLimits, visible as Visibility<E, unknown> | null, viewer);
    } finally {
      set.delete(placeholder);
      if (set.size === 0 && index.get(key) === set) index.delete(key);
    }
    if (stoppedWhileOpening) {
      subscriber.shutdown();
      return subscriber;
    }
    if (!fromRequestedPosition) subscriber.startsAtRealPosition();
    // The set may have been emptied and dropped meanwhile: register in the current one.
    (index.get(key) ?? index.set(key, new Set()).get(key)!).add(subscriber);
    // A stream from the head has nothing to fetch: an event after the head was committed after
    // the head's read began, so published after the placeholder was registered, and it is in
    // `early` or comes live. Nor has one from an up-to-date sibling's position (startOf): an event
    // after it had not been heard here yet, and comes live. Not asking the outbox spares a query
    // per stream opened; with thousands of streams opening at once, those queries waiting for the
    // pool kept their garbage alive into the old generation, which then held about twice the
    // memory the streams need (docs/benchmark-history.md, "Fan-out per subscriber"). A catch-up
    // asked meanwhile is done.
    if (fromRequestedPosition || catchUpMissed) subscriber.catchUp(fromRequestedPosition);
    for (const item of early) subscriber.offer(item);
    return subscriber;
  }

  /**
   * Where a stream opened without Last-Event-ID starts. Beside a stream of the same user that is
   * up to date here (nothing pending, nothing being fetched), at that stream's position, with no
   * read: the stream then opens within its request's own turn, where in a storm of opens (clients
   * reconnecting) a read per stream kept every request's garbage waiting into the old generation
   * (docs/benchmark-history.md, "seventeenth session"). Every event after that position reaches
   * this instance's subscribers of the user from now on, and what the sibling has seen was
   * committed, so the position is at or before the head. At worst the new stream also gets an
   * event committed before it opened and not yet heard here, as if it had opened that much
   * earlier: a moment, or the few seconds until the relay publishes what a crashed instance had
   * committed. While the bus is down, and from its return until its second catch-up, a sibling
   * may lack what the bus lost, so no position is lent. Otherwise the stream starts at the head,
   * read from the database with the others asked at the same moment.
   */
  function startOf<E>(channel: SubscriberChannel<E>, key: string, readHead: (key: string) => Promise<bigint>): Promise<bigint> | (() => Promise<bigint>) {
    if (lendingPaused || !bus.listening()) return () => readHead(key);
    for (const subscriber of channel.index.get(key) ?? []) {
      // A placeholder (a stream still opening) is not a Subscriber and has no position yet.
      const position = subscriber instanceof Subscriber ? subscriber.upToDatePosition : null;
      if (position !== null) return Promise.resolve(position);
    }
    return () => readHead(key);
  }

  /**
   * A transaction's or a user's stream. `visible`, a rule shared by every subscriber of its kind,
   * is asked with this subscriber's `viewer` whether an event may be shown (a user stream shows
   * only the caller's space).
   */
  function subscribe<V>(
    target: StreamTarget,
    options: SubscribeOptions,
    listener: StreamListener,
    visible: Visibility<PublishedEvent, V> | null = null,
    viewer: V | null = null,
  ): Promise<Subscription> {
    const after = options.afterSequence === undefined ? undefined : BigInt(options.afterSequence);
    if (target.kind === 'transaction') {
      // A transaction stream starts at a position the client chose: its start, or Last-Event-ID.
      return attach(transactions, target.transactionId, Promise.resolve(after ?? 0n), listener, true, visible, viewer);
    }
    // A user stream without Last-Event-ID starts from now on (startOf).
    const start = after === undefined ? startOf(users, target.userId, userHead) : Promise.resolve(after);
    return attach(users, target.userId, start, listener, after !== undefined, visible, viewer);
  }

  /**
   * A user's task stream: the task events of which they are the recipient, after Last-Event-ID,
   * or from now on without it (as a user's transaction stream).
   */
  function subscribeTaskEvents<V>(
    userId: string,
    options: SubscribeOptions,
    listener: StreamListener<PublishedTaskEvent>,
    visible: Visibility<PublishedTaskEvent, V>,
    viewer: V,
  ): Promise<Subscription> {
    const after = options.afterSequence === undefined ? undefined : BigInt(options.afterSequence);
    const start = after === undefined ? startOf(tasks, userId, taskHead) : Promise.resolve(after);
    return attach(tasks, userId, start, listener, after !== undefined, visible, viewer);
  }

  async function stop() {
    // Unsubscribing asks the bus, which may be down (Redis unreachable): the streams must end all
    // the same, and closing the bus afterwards drops its subscriptions anyway.
    await Promise.allSettled([stopListening?.(), stopListeningToTasks?.()]);
    stopListening = null;
    stopListeningToTasks = null;
    for (const { index } of channels) {
      for (const set of [...index.values()]) for (const subscriber of [...set]) subscriber.shutdown();
      index.clear();
    }
  }

  return { start, subscribe, subscribeTaskEvents, nextEventOf, stop };
}

export type EventHub = ReturnType<typeof createEventHub>;
