import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createApiKey, linkUser } from '../helpers/actors.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { lockWaiters, until as waitUntil } from '../helpers/locks.ts';
import { agentMarket, buy, credit } from '../helpers/market.ts';
import { roundTripMeter } from '../helpers/round-trips.ts';
import { openEventSource } from '../helpers/server.ts';

/**
 * Streams that open at once (clients reconnecting after a restart) share their lookups: one for
 * the credential they all carry, one for its link to the user, one read of the heads they start
 * from (engine/common/shared-loads.ts, events/sources.ts batchedHeads). Sharing must not move a
 * stream's starting point: each starts at its own user's head and gets the next event, and only it.
 * The database round trips are counted from outside the engine (helpers/round-trips.ts), on
 * PostgreSQL only: the embedded database answers a head read before the next stream arrives.
 */
let test: TestApp;
let meter: ReturnType<typeof roundTripMeter>;
let url: string;
const sources: { close(): void }[] = [];
beforeAll(async () => {
  test = await startTestApp();
  meter = roundTripMeter(test);
  await new Promise<void>((resolve) => meter.server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(meter.server.address() as AddressInfo).port}/api/v1/transactions/events`;
});
afterAll(async () => {
  for (const source of sources) source.close();
  meter.server.closeAllConnections();
  await new Promise((resolve) => meter.server.close(resolve));
  await test.close();
});

/** Credentials for `user` on an API key this instance has never looked up. */
async function freshCredentials(user: Actor) {
  const key = await createApiKey(test);
  await linkUser(test, key.id, user.userId);
  return { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': user.userId };
}

/** `count` streams opened in the same moment, all marked `mark` for the round-trip count. */
async function openStreams(count: number, headers: Record<string, string>, mark: string) {
  const opened = Array.from({ length: count }, () => openEventSource(url, { ...headers, 'X-Measured': mark }));
  sources.push(...opened);
  await Promise.all(opened.map((stream) => stream.opened));
  return opened;
}

async function until(done: () => boolean) {
  for (let waited = 0; !done(); waited += 20) {
    if (waited > 10_000) throw new Error('timed out waiting for the streams');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('streams opening at once', () => {
  it('with one credential the instance has not seen each start at the head and get the next event, and only it', async () => {
    const { buyer, capability } = await agentMarket(test);
    await buy(test, buyer, capability.id);
    // Twenty streams: as many as one credential may hold open.
    const streams = await openStreams(20, await freshCredentials(buyer), randomUUID());
    const next = await buy(test, buyer, capability.id);
    await until(() => streams.every((stream) => stream.received.length > 0));
    for (const stream of streams) {
      // The purchase before the streams opened is behind their head: only the new one arrives, as event 2.
      expect(stream.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['2', next.id]]);
    }
  });

  it.runIf(usingRealBackends())('while the database is slow share one credential lookup and read their heads together', async () => {
    const { buyer, capability } = await agentMarket(test);
    await buy(test, buyer, capability.id);
    const headers = await freshCredentials(buyer);
    const mark = randomUUID();
    const { db } = test.runtime.engine.dependencies;
    // The keys' and the heads' tables held by another transaction: the first stream's key lookup
    // waits, as under a storm, and the streams that arrive meanwhile wait for its answer.
    const holder = await db.transaction();
    const opening: ReturnType<typeof openEventSource>[] = [];
    try {
      await holder.raw('LOCK TABLE api_keys, event_streams IN ACCESS EXCLUSIVE MODE');
      const connections = () => new Promise<number>((resolve) => meter.server.getConnections((_, count) => resolve(count)));
      const connectedBefore = await connections();
      opening.push(...Array.from({ length: 20 }, () => openEventSource(url, { ...headers, 'X-Measured': mark })));
      sources.push(...opening);
      // Every stream connected and the first key lookup waiting; then a moment for the requests to
      // join it (a late one costs one more read, within the bound below).
      await waitUntil(async () => (await connections()) >= connectedBefore + opening.length && (await lockWaiters(db)) > 0);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      // Released whatever happened, so that a failure here does not hold the next test up too.
      await holder.commit();
    }
    await Promise.all(opening.map((stream) => stream.opened));
    // Unshared, every stream read its own head, and each that came before the first key lookup
    // ended looked the key and its link up again (24 round trips in a run). Shared: the key, the
    // link, the key's last use and one head read for all (4 in a run).
    expect(meter.roundTripsOf(mark)).toBeLessThanOrEqual(8);
    const next = await buy(test, buyer, capability.id);
    await until(() => opening.every((stream) => stream.received.length > 0));
    for (const stream of opening) expect(stream.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['2', next.id]]);
  });

  it('for several users each start at their own user head', async () => {
    const first = await agentMarket(test);
    const second = await agentMarket(test);
    await credit(test, second.buyer.userId, '10.00');
    for (let index = 0; index < 3; index++) await buy(test, first.buyer, first.capability.id);
    await buy(test, second.buyer, second.capability.id);
    const mark = randomUUID();
    const [firstHeaders, secondHeaders] = await Promise.all([freshCredentials(first.buyer), freshCredentials(second.buyer)]);
    const opening = [openStreams(5, firstHeaders, mark), openStreams(5, secondHeaders, mark)];
    const [firstStreams, secondStreams] = await Promise.all(opening);
    const [firstNext, secondNext] = [await buy(test, first.buyer, first.capability.id), await buy(test, second.buyer, second.capability.id)];
    await until(() => [...firstStreams!, ...secondStreams!].every((stream) => stream.received.length > 0));
    for (const stream of firstStreams!) expect(stream.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['4', firstNext.id]]);
    for (const stream of secondStreams!) expect(stream.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['2', secondNext.id]]);
  });
});

/**
 * A stream opened beside another of the same user on this instance starts at that stream's
 * position when it is up to date, instead of reading the head (events/hub.ts startOf): it must
 * still get exactly the events after it opened.
 */
describe('a stream opened beside another stream of the same user', () => {
  it('starts after the last event the other stream got, and gets the next one', async () => {
    const { buyer, capability } = await agentMarket(test);
    const headers = await freshCredentials(buyer);
    const [first] = await openStreams(1, headers, randomUUID());
    const seen = await buy(test, buyer, capability.id);
    await until(() => first!.received.length === 1);
    const [second] = await openStreams(1, headers, randomUUID());
    const next = await buy(test, buyer, capability.id);
    await until(() => first!.received.length === 2 && second!.received.length > 0);
    expect(first!.received.map((event) => [event.id, event.data.transaction_id])).toEqual([
      ['1', seen.id],
      ['2', next.id],
    ]);
    expect(second!.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['2', next.id]]);
  });

  it('beside a stream resumed at a Last-Event-ID beyond the head, still starts at the head', async () => {
    const { buyer, capability } = await agentMarket(test);
    await buy(test, buyer, capability.id);
    const headers = await freshCredentials(buyer);
    // A client may name any sequence; this one is far past the user's one event.
    const [ahead] = await openStreams(1, { ...headers, 'Last-Event-ID': '1000' }, randomUUID());
    const [fromNow] = await openStreams(1, headers, randomUUID());
    const next = await buy(test, buyer, capability.id);
    await until(() => fromNow!.received.length > 0);
    expect(fromNow!.received.map((event) => [event.id, event.data.transaction_id])).toEqual([['2', next.id]]);
    expect(ahead!.received).toEqual([]);
  });
});
