import { EventEmitter } from 'node:events';
import { Redis } from 'ioredis';

/**
 * The event bus carries committed state changes between server instances. Redis pub/sub is the
 * production bus; the in-process bus has the same interface so a single embedded instance needs
 * no Redis. Messages are strings: they are built once and fanned out as they are.
 */
export interface EventBus {
  readonly kind: 'redis' | 'in-process';
  readonly describe: string;
  /**
   * The Redis command connection and the prefix of this bus's names, for other state instances
   * share (rate-limit counters); null on the in-process bus.
   */
  readonly shared: { redis: Redis; keyPrefix: string } | null;
  publish(channel: string, message: string): Promise<void>;
  /**
   * `ownAtOnce`: the handler also hears this instance's own messages as they are published,
   * before the bus has carried them anywhere, and then again when the bus brings them back (a
   * handler that asks for this tells duplicates apart itself; the event hub does by sequence).
   */
  subscribe(channel: string, handler: (message: string) => void, options?: { ownAtOnce?: boolean }): Promise<() => Promise<void>>;
  /**
   * Called each time the subscription connection comes back after a loss. Pub/sub keeps nothing,
   * so whatever was published meanwhile must be fetched from the outbox by the caller.
   */
  onReconnect(handler: () => void): void;
  /**
   * Whether the subscription connection is up as far as this instance knows: while it is not,
   * messages published elsewhere are not heard here (the hub lends no stream position then).
   */
  listening(): boolean;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function createInProcessBus(): EventBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    kind: 'in-process',
    describe: 'in-process event bus',
    shared: null,
    async publish(channel, message) {
      emitter.emit(channel, message);
    },
    async subscribe(channel, handler) {
      emitter.on(channel, handler);
      return async () => {
        emitter.off(channel, handler);
      };
    },
    onReconnect() {
      // An in-process bus never loses its connection.
    },
    listening: () => true,
    async ping() {},
    async close() {
      emitter.removeAllListeners();
    },
  };
}

/**
 * Redis needs one connection for publishing and commands and a second one in subscriber mode.
 * `channelPrefix` namespaces channels so test workers sharing one Redis never see each other.
 */
export function createRedisBus(url: string, channelPrefix = ''): EventBus {
  const options = { lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true } as const;
  // Commands issued in the same tick (a request's rate-limit buckets, taken together) leave in one
  // write, so they cost one round trip instead of one each.
  const publisher = new Redis(url, { ...options, enableAutoPipelining: true });
  const subscriber = new Redis(url, options);
  const handlers = new Map<string, Set<(message: string) => void>>();
  /** Handlers that hear this instance's own messages at once, by channel (see EventBus.subscribe). */
  const atOnce = new Map<string, Set<(message: string) => void>>();
  subscriber.on('message', (channel: string, message: string) => {
    for (const handler of handlers.get(channel) ?? []) handler(message);
  });
  // Errors surface through ping() and publish(); without a listener ioredis would print them.
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  const reconnectHandlers: (() => void)[] = [];
  let connectedBefore = false;
  subscriber.on('ready', () => {
    if (connectedBefore) for (const handler of reconnectHandlers) handler();
    connectedBefore = true;
  });
  const parsed = new URL(url);
  return {
    kind: 'redis',
    describe: `Redis at ${parsed.hostname}:${parsed.port || 6379}`,
    shared: { redis: publisher, keyPrefix: channelPrefix },
    async publish(channel, message) {
      const sent = publisher.publish(channelPrefix + channel, message);
      // Local streams need not wait for the round trip through Redis (a millisecond on a quiet
      // machine, ten and more on a loaded one); a handler's failure is not the publisher's.
      for (const handler of atOnce.get(channelPrefix + channel) ?? []) {
        try {
          handler(message);
        } catch {
          // The same message comes back from Redis: the handler sees it again there.
        }
      }
      await sent;
    },
    async subscribe(channel, handler, options) {
      const fullChannel = channelPrefix + channel;
      if (options?.ownAtOnce) (atOnce.get(fullChannel) ?? atOnce.set(fullChannel, new Set()).get(fullChannel)!).add(handler);
      let set = handlers.get(fullChannel);
      if (!set) {
        set = new Set();
        handlers.set(fullChannel, set);
        await subscriber.subscribe(fullChannel);
      }
      set.add(handler);
      return async () => {
        atOnce.get(fullChannel)?.delete(handler);
        set.delete(handler);
        if (set.size === 0 && handlers.get(fullChannel) === set) {
          handlers.delete(fullChannel);
          await subscriber.unsubscribe(fullChannel);
        }
      };
    },
    onReconnect(handler) {
      reconnectHandlers.push(handler);
    },
    listening: () => subscriber.status === 'ready',
    async ping() {
      await publisher.ping();
    },
    async close() {
      publisher.disconnect();
      subscriber.disconnect();
    },
  };
}
