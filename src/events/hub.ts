import type { Database } from '../db/database.ts';
import { limits } from '../limits.ts';
import type { Logger } from '../logger.ts';
import type { OutboxRow } from '../store/outbox.ts';
import type { EventBus } from './bus.ts';
import { eventsChannel, type PublishedEvent, rememberJson, toPublishedEvent } from './publisher.ts';
import type { StreamListener, StreamTarget, Subscription, SubscribeOptions } from './stream-types.ts';
import { Subscriber, type SubscriberSource } from './subscriber.ts';
import type { TaskEventRow } from '../store/task-events.ts';
import { type PublishedTaskEvent, taskEventsChannel, toPublishedTaskEvent } from './task-feed.ts';

/**
 * Each server instance listens once on the bus and hands every event to its own local
 * subscribers of that transaction and of its two parties. Subscribers fill gaps from the outbox
 * table, so a lost message (Redis restart, crash before publish) costs latency, never an event.
 */
export function createEventHub(bus: EventBus, db: Database, log: Logger) {
  const byTransaction = new Map<string, Set<Subscriber>>();
  const byUser = new Map<string, Set<Subscriber>>();
  /** Task streams (docs/tasks.md "Task events"), by recipient: every task event is one recipient's. */
  const byTaskRecipient = new Map<string, Set<Subscriber<PublishedTaskEvent>>>();
  let stopListening: (() => Promise<void>) | null = null;
  let stopListeningToTasks: (() => Promise<void>) | null = null;

  const deliver = (index: Map<string, Set<Subscriber>>, key: string, event: PublishedEvent) => {
    for (const subscriber of index.get(key) ?? []) subscriber.offer(event);
  };

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

  function onMessage(message: string) {
    // An instance that holds no streams nor waiters (one serving only API calls) need not read the event.
    if (byTransaction.size === 0 && byUser.size === 0 && watchers.size === 0) return;
    let event: PublishedEvent;
    try {
      event = JSON.parse(message) as PublishedEvent;
      rememberJson(event, message);
    } catch (error) {
      log.warn('unreadable event on the bus', { error });
      return;
    }
    for (const wake of [...(watchers.get(event.transaction_id) ?? [])]) wake();
    deliver(byTransaction, event.transaction_id, event);
    deliver(byUser, event.buyer_user_id, event);
    if (event.seller_user_id !== event.buyer_user_id) deliver(byUser, event.seller_user_id, event);
  }

  function onTaskMessage(message: string) {
    if (byTaskRecipient.size === 0) return;
    let event: PublishedTaskEvent;
    try {
      event = JSON.parse(message) as PublishedTaskEvent;
      rememberJson(event, message);
    } catch (error) {
      log.warn('unreadable task event on the bus', { error });
      return;
    }
    for (const subscriber of byTaskRecipient.get(event.recipient_user_id) ?? []) subscriber.offer(event);
  }

  /**
   * After the bus connection was lost, every local subscriber fetches what it missed. Once at
   * reconnection, and once more a moment later, because the resubscription itself completes a
   * little after the connection is ready and a message can fall in between.
   */
  function catchUpEveryone() {
    for (const index of [byTransaction, byUser, byTaskRecipient] as Map<string, Set<{ catchUp(): void }>>[]) {
      for (const set of index.values()) for (const subscriber of set) subscriber.catchUp();
    }
  }

  async function start() {
    if (stopListening) return;
    stopListening = await bus.subscribe(eventsChannel, onMessage);
    stopListeningToTasks = await bus.subscribe(taskEventsChannel, onTaskMessage);
    bus.onReconnect(() => {
      log.info('event bus reconnected; subscribers catch up from the outbox');
      catchUpEveryone();
      setTimeout(catchUpEveryone, limits.busReconnectSecondCatchUpMs).unref();
    });
  }

  function sourceFor(target: StreamTarget, visible: (event: PublishedEvent) => boolean): SubscriberSource {
    if (target.kind === 'transaction') {
      return {
        sequenceOf: (event) => BigInt(event.transaction_sequence),
        visible,
        headSequence: async () => BigInt((await db('transactions').where({ id: target.transactionId }).first('event_sequence'))?.event_sequence ?? 0),
        fetchAfter: async (after, limit) =>
          (
            (await db('outbox_events')
              .where({ transaction_id: target.transactionId })
              .where('transaction_sequence', '>', String(after))
              .orderBy('transaction_sequence')
              .limit(limit)) as OutboxRow[]
          ).map(toPublishedEvent),
      };
    }
    const { userId } = target;
    return {
      sequenceOf: (event) => BigInt(event.buyer_user_id === userId ? event.buyer_sequence : event.seller_sequence),
      visible,
      headSequence: async () => BigInt((await db('event_streams').where({ owner_user_id: userId }).first('last_sequence'))?.last_sequence ?? 0),
      fetchAfter: async (after, limit) => {
        const result = await db.raw(
          `SELECT * FROM (
             SELECT *, buyer_sequence AS owner_sequence FROM outbox_events WHERE buyer_user_id = ? AND buyer_sequence > ?
             UNION ALL
             SELECT *, seller_sequence AS owner_sequence FROM outbox_events WHERE seller_user_id = ? AND seller_sequence > ?
           ) AS mine ORDER BY owner_sequence LIMIT ?`,
          [userId, String(after), userId, String(after), limit],
        );
        return (result.rows as OutboxRow[]).map(toPublishedEvent);
      },
    };
  }

  async function startingPoint(target: StreamTarget, options: SubscribeOptions): Promise<bigint> {
    if (options.afterSequence !== undefined) return BigInt(options.afterSequence);
    if (target.kind === 'transaction') return 0n;
    const row = await db('event_streams').where({ owner_user_id: target.userId }).first('last_sequence');
    return BigInt(row?.last_sequence ?? 0);
  }

  /**
   * Registers first and reads the starting point second, so an event committed in between is
   * either at or before the starting point (skipped) or after it (delivered): never lost.
   */
  async function attach<E>(
    index: Map<string, Set<Subscriber<E>>>,
    key: string,
    startingPoint: () => Promise<bigint>,
    source: SubscriberSource<E>,
    listener: StreamListener<E>,
    fromRequestedPosition: boolean,
  ): Promise<Subscription> {
    const early: E[] = [];
    // Stands in while the starting point is read; the real subscriber catches up on its own.
    const placeholder = { offer: (event: E) => early.push(event), catchUp: () => {} } as unknown as Subscriber<E>;
    const set = index.get(key) ?? new Set<Subscriber<E>>();
    index.set(key, set);
    set.add(placeholder);
    let subscriber: Subscriber<E>;
    try {
      const start = await startingPoint();
      subscriber = new Subscriber<E>(
        start,
        source,
        listener,
        { pendingEventsMax: limits.streamPendingEventsMax, catchUpBatchSize: limits.streamCatchUpBatchSize },
        (ended) => {
          set.delete(ended);
          if (set.size === 0 && index.get(key) === set) index.delete(key);
        },
      );
    } finally {
      set.delete(placeholder);
    }
    set.add(subscriber);
    subscriber.catchUp(fromRequestedPosition);
    for (const event of early) subscriber.offer(event);
    return { close: () => subscriber.close() };
  }

  function subscribe(
    target: StreamTarget,
    options: SubscribeOptions,
    listener: StreamListener,
    visible: (event: PublishedEvent) => boolean = () => true,
  ): Promise<Subscription> {
    const index = target.kind === 'transaction' ? byTransaction : byUser;
    const key = target.kind === 'transaction' ? target.transactionId : target.userId;
    // A transaction stream starts at a position the client chose (its start, or Last-Event-ID);
    // a user stream without Last-Event-ID starts at the head, which nothing can be older than.
    return attach(
      index,
      key,
      () => startingPoint(target, options),
      sourceFor(target, visible),
      listener,
      target.kind === 'transaction' || options.afterSequence !== undefined,
    );
  }

  /**
   * A user's task stream: the task events of which they are the recipient, after Last-Event-ID,
   * or from now on without it (as a user's transaction stream).
   */
  function subscribeTaskEvents(
    userId: string,
    options: SubscribeOptions,
    listener: StreamListener<PublishedTaskEvent>,
    visible: (event: PublishedTaskEvent) => boolean,
  ): Promise<Subscription> {
    const head = async () => BigInt((await db('task_event_streams').where({ owner_user_id: userId }).first('last_sequence'))?.last_sequence ?? 0);
    const source: SubscriberSource<PublishedTaskEvent> = {
      sequenceOf: (event) => BigInt(event.sequence),
      visible,
      headSequence: head,
      fetchAfter: async (after, limit) =>
        (
          (await db('task_events')
            .where({ recipient_user_id: userId })
            .where('recipient_sequence', '>', String(after))
            .orderBy('recipient_sequence')
            .limit(limit)) as TaskEventRow[]
        ).map(toPublishedTaskEvent),
    };
    const startingAt = () => (options.afterSequence === undefined ? head() : Promise.resolve(BigInt(options.afterSequence)));
    return attach(byTaskRecipient, userId, startingAt, source, listener, options.afterSequence !== undefined);
  }

  async function stop() {
    // Unsubscribing asks the bus, which may be down (Redis unreachable): the streams must end all
    // the same, and closing the bus afterwards drops its subscriptions anyway.
    await Promise.allSettled([stopListening?.(), stopListeningToTasks?.()]);
    stopListening = null;
    stopListeningToTasks = null;
    for (const index of [byTransaction, byUser, byTaskRecipient] as Map<string, Set<{ shutdown(): void }>>[]) {
      for (const set of index.values()) for (const subscriber of [...set]) subscriber.shutdown();
      index.clear();
    }
  }

  return { start, subscribe, subscribeTaskEvents, nextEventOf, stop };
}

export type EventHub = ReturnType<typeof createEventHub>;
