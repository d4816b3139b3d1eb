import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import type { EventBus } from '../../src/events/bus.ts';
import { eventsChannel } from '../../src/events/publisher.ts';
import { taskEventsChannel } from '../../src/events/task-feed.ts';
import type { Actor } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { listen, openEventSource } from '../helpers/server.ts';

/**
 * An instance listens on the bus once per channel kind (transaction events, task events), however
 * many streams of whatever kind it serves: a stream costs the instance no subscription of its own.
 */
const active = new Map<string, number>();
const count = (channel: string, change: number) => active.set(channel, (active.get(channel) ?? 0) + change);

/** The bus the app is given, counting the subscriptions open on it per channel. */
function counting(bus: EventBus): EventBus {
  const subscribe = bus.subscribe.bind(bus);
  bus.subscribe = async (channel, handler, options) => {
    const unsubscribe = await subscribe(channel, handler, options);
    count(channel, 1);
    return async () => {
      count(channel, -1);
      await unsubscribe();
    };
  };
  return bus;
}

let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let sockets: { close(): Promise<void> };
beforeAll(async () => {
  test = await startTestApp({}, { wrapBus: counting });
  server = await listen(test);
  sockets = attachRpcWebSocket(server.server, test.runtime.engine);
});
afterAll(async () => {
  await sockets.close();
  await server.close();
  await test.close();
});

/** Redis's own count of connections subscribed to each of this app's channels (real backend only). */
async function subscribedOnRedis(): Promise<number[] | null> {
  const shared = test.runtime.bus.shared;
  if (!shared) return null;
  const answer = (await shared.redis.call('PUBSUB', 'NUMSUB', shared.keyPrefix + eventsChannel, shared.keyPrefix + taskEventsChannel)) as (string | number)[];
  return [Number(answer[1]), Number(answer[3])];
}

/** A WebSocket whose `tasks/resubscribe` calls are answered once each. */
async function socketOf(actor: Actor) {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers: actor.headers });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const answers = new Map<string, (message: Record<string, unknown>) => void>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as Record<string, unknown>;
    if (typeof message.id === 'string') answers.get(message.id)?.(message);
  });
  const call = (method: string, params: unknown) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = randomUUID();
      answers.set(id, resolve);
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  return { socket, call };
}

describe('bus subscriptions of an instance', () => {
  it('stay one per channel kind while streams of every kind open, receive and close', async () => {
    const before = new Map(active);
    expect(before.get(eventsChannel)).toBe(1);
    expect(before.get(taskEventsChannel)).toBe(1);
    expect(await subscribedOnRedis()).toEqual(test.runtime.bus.shared ? [1, 1] : null);

    const perKind = 5;
    const markets = await Promise.all([agentMarket(test, '1000.00'), agentMarket(test, '1000.00'), agentMarket(test, '1000.00')]);
    const deals = [];
    const sockets: WebSocket[] = [];
    for (const { buyer, capability } of markets) {
      const deal = await buy(test, buyer, capability.id);
      const open = (path: string) => openEventSource(`${server.url}${path}`, buyer.headers);
      const mine = {
        buyer,
        capability,
        deal,
        userStreams: Array.from({ length: perKind }, () => open('/api/v1/transactions/events')),
        transactionStreams: Array.from({ length: perKind }, () => open(`/api/v1/transactions/${deal.id}/events`)),
        taskStreams: Array.from({ length: perKind }, () => open('/api/v1/tasks/events')),
      };
      await Promise.all([...mine.userStreams, ...mine.transactionStreams, ...mine.taskStreams].map((stream) => stream.opened));
      const { socket, call } = await socketOf(buyer);
      sockets.push(socket);
      for (let index = 0; index < perKind; index++)
        expect((await call('tasks/resubscribe', { id: deal.id })).result).toMatchObject({ subscription: expect.any(String) });
      deals.push(mine);
    }
    expect(test.runtime.engine.admission.sseStreams.openTotal).toBe(markets.length * perKind * 4);

    // Every stream is live: the buyer's next changes reach each of its streams.
    for (const { buyer, capability, deal } of deals) {
      await act(test, buyer, deal.id, 'freeze').expect(200);
      await buy(test, buyer, capability.id);
    }
    for (const { userStreams, transactionStreams } of deals) {
      for (const stream of userStreams)
        await expect.poll(() => stream.received.map((event) => event.type)).toEqual(['transaction.frozen', 'transaction.pending_freeze']);
      for (const stream of transactionStreams)
        await expect.poll(() => stream.received.map((event) => event.type)).toEqual(['transaction.pending_freeze', 'transaction.frozen']);
    }

    expect(active).toEqual(before);
    expect(await subscribedOnRedis()).toEqual(test.runtime.bus.shared ? [1, 1] : null);

    for (const { userStreams, transactionStreams, taskStreams } of deals)
      for (const stream of [...userStreams, ...transactionStreams, ...taskStreams]) stream.close();
    for (const socket of sockets) socket.close();
    await expect.poll(() => test.runtime.engine.admission.sseStreams.openTotal).toBe(0);
    expect(active).toEqual(before);
    expect(await subscribedOnRedis()).toEqual(test.runtime.bus.shared ? [1, 1] : null);
  });

  it("hand the instance's own messages to a handler that asks as they are published, before the bus carries them", async () => {
    const { bus } = test.runtime;
    const heard: string[] = [];
    const stop = await bus.subscribe('fan-out-test', (message) => heard.push(message), { ownAtOnce: true });
    const sent = bus.publish('fan-out-test', 'one');
    expect(heard).toEqual(['one']);
    await sent;
    // Redis brings the message back as well (the event hub drops that copy by sequence); the
    // in-process bus has no second copy to bring.
    await expect.poll(() => heard).toEqual(bus.kind === 'redis' ? ['one', 'one'] : ['one']);
    await stop();
  });
});
