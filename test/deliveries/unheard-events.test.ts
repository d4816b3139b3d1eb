import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchLockClass, sweepUnheard } from '../../src/engine/deliveries/index.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { createAgent } from '../helpers/actors.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * Events nobody hears (no party of theirs has a webhook or a push config) leave the dispatch queue
 * in one statement, without the full pass (src/engine/deliveries/unheard-events.ts); the events a
 * party's subscription may hear still get the full pass, and their deliveries, in order.
 */
let test: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await test.close();
});

const db = () => test.runtime.engine.dependencies.db;
const undispatched = async (feed: string) =>
  (await db()('undispatched_events').where({ feed }).orderBy('event_id').select('event_id')).map((row: { event_id: string }) => String(row.event_id));
const eventIdsOf = async (transactionIds: string[]) =>
  (await db()('outbox_events').whereIn('transaction_id', transactionIds).orderBy('id').select('id')).map((row: { id: string }) => String(row.id));
const deliveredEvents = async (eventIds: string[]) =>
  (
    await db()('webhook_deliveries').where({ source: 'transaction' }).whereIn('source_event_id', eventIds).orderBy('source_event_id').select('source_event_id')
  ).map((row: { source_event_id: string }) => String(row.source_event_id));

describe('events no subscription hears', () => {
  it('leave the queue without deliveries, while a subscribed buyer or seller still gets every event of theirs, in order', async () => {
    const heardByBuyer = await agentMarket(test);
    const heardBySeller = await agentMarket(test);
    const unheard = await agentMarket(test);
    await test.http
      .post('/api/v1/webhooks')
      .set(heardByBuyer.buyer.headers)
      .send({ url: receiver.url('/buyer'), event_types: ['transaction.*'] })
      .expect(201);
    await test.http
      .post('/api/v1/webhooks')
      .set(heardBySeller.seller.headers)
      .send({ url: receiver.url('/seller'), event_types: ['transaction.*'] })
      .expect(201);

    const bought = { buyer: [] as string[], seller: [] as string[], none: [] as string[] };
    for (let round = 0; round < 3; round++) {
      for (const [key, market] of [
        ['buyer', heardByBuyer],
        ['none', unheard],
        ['seller', heardBySeller],
      ] as const) {
        const { id } = await buy(test, market.buyer, market.capability.id);
        await act(test, market.buyer, id, 'freeze').expect(200);
        bought[key].push(id);
      }
    }
    const unheardEvents = await eventIdsOf(bought.none);
    expect(unheardEvents).toHaveLength(6);
    expect(await undispatched('outbox_events')).toEqual(expect.arrayContaining(unheardEvents));

    await test.runtime.engine.webhooks.runOnce();

    expect(await undispatched('outbox_events')).toEqual([]);
    expect(await deliveredEvents(unheardEvents)).toEqual([]);
    for (const [key, path] of [
      ['buyer', '/buyer'],
      ['seller', '/seller'],
    ] as const) {
      const events = await eventIdsOf(bought[key]);
      expect(await deliveredEvents(events)).toEqual(events);
      const received = receiver
        .at(path)
        .map((request) => JSON.parse(request.body) as { data: { id: string; transaction_id: string; transaction_sequence: number } });
      expect(received.map((body) => body.data.id).sort((a, b) => Number(a) - Number(b))).toEqual(events);
      // Each transaction's events reached its receiver in the order they were made.
      for (const id of bought[key]) {
        const sequences = received.filter((body) => body.data.transaction_id === id).map((body) => body.data.transaction_sequence);
        expect(sequences).toEqual([1, 2]);
      }
    }
  });

  // A second connection holds the lock: the embedded database has one connection.
  it.runIf(usingRealBackends())('are left alone in a feed whose dispatch another instance holds, and taken once it lets go', async () => {
    const { buyer, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    const events = await eventIdsOf([id]);
    const held = await db().transaction();
    try {
      await held.raw('SELECT pg_advisory_xact_lock(?, 1)', [dispatchLockClass]);
      const swept = await sweepUnheard(db());
      expect(swept.transaction).toEqual({ swept: 0, heard: false, full: false });
      expect(await undispatched('outbox_events')).toEqual(expect.arrayContaining(events));
    } finally {
      await held.rollback();
    }
    const swept = await sweepUnheard(db());
    expect(swept.transaction.swept).toBeGreaterThanOrEqual(1);
    expect(await undispatched('outbox_events')).toEqual([]);
  });

  it('say when a window is full, so that the dispatcher comes back for the rest', async () => {
    const { buyer, capability } = await agentMarket(test);
    const ids: string[] = [];
    for (let index = 0; index < 5; index++) ids.push((await buy(test, buyer, capability.id)).id);
    const events = await eventIdsOf(ids);

    const first = await sweepUnheard(db(), 3);
    expect(first.transaction).toEqual({ swept: 3, heard: false, full: true });
    // The oldest go first.
    expect(await undispatched('outbox_events')).toEqual(events.slice(3));
    const second = await sweepUnheard(db(), 3);
    expect(second.transaction).toEqual({ swept: 2, heard: false, full: false });
    expect(await undispatched('outbox_events')).toEqual([]);
  });

  it('of a task feed leave the queue too, while a subscribed publisher gets its task events', async () => {
    const heard = await createAgent(test);
    const unheard = await createAgent(test);
    await test.http
      .post('/api/v1/webhooks')
      .set(heard.headers)
      .send({ url: receiver.url('/tasks'), event_types: ['task.*'] })
      .expect(201);
    const publish = async (owner: typeof heard) =>
      (
        await test.http
          .post('/api/v1/tasks/')
          .set(owner.headers)
          .send({ title: 'Translate a manual', description: 'Forty pages, English to Chinese', mode: 'online', category: 'translation' })
          .expect(201)
      ).body.data as { id: string };
    const heardTask = await publish(heard);
    const unheardTask = await publish(unheard);
    const eventsOf = async (taskId: string) =>
      (await db()('task_events').where({ task_id: taskId }).orderBy('id').select('id')).map((row: { id: string }) => String(row.id));
    const [heardEvents, unheardEvents] = [await eventsOf(heardTask.id), await eventsOf(unheardTask.id)];
    expect(heardEvents.length).toBeGreaterThan(0);
    expect(unheardEvents.length).toBeGreaterThan(0);

    await test.runtime.engine.webhooks.runOnce();

    expect(await undispatched('task_events')).toEqual([]);
    const delivered = async (ids: string[]) =>
      (await db()('webhook_deliveries').where({ source: 'task' }).whereIn('source_event_id', ids).orderBy('source_event_id').select('source_event_id')).map(
        (row: { source_event_id: string }) => String(row.source_event_id),
      );
    expect(await delivered(unheardEvents)).toEqual([]);
    expect(await delivered(heardEvents)).toEqual(heardEvents);
    await expect.poll(() => receiver.at('/tasks').length).toBe(heardEvents.length);
  });

  it('do not include a demand match whose recipient has a webhook: the full pass delivers it', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await test.http
      .post('/api/v1/webhooks')
      .set(seller.headers)
      .send({ url: receiver.url('/demands'), event_types: ['demand.*'] })
      .expect(201);
    // Rows as the matcher writes them (src/engine/market/demand-matches.ts): the delivered body is the DemandMatchedEvent.
    const insertDemandEvent = async (recipient: string) => {
      const demandId = randomUUID();
      const payload = {
        type: 'demand.matched',
        demand_id: demandId,
        capability: { id: capability.id, title: 'Summaries', price: '10.00', currency: 'UT', pricing_model: 'per_use', category: 'data' },
        score: 0.9,
        similarity: 0.9,
        price_alignment: 1,
        quality_score: 0,
      };
      return String(
        (
          (await db()('demand_events')
            .insert({
              demand_id: demandId,
              capability_id: capability.id,
              recipient_user_id: recipient,
              space: 'agent',
              type: 'demand.matched',
              payload,
              created_at: new Date(),
            })
            .returning('id')) as { id: string }[]
        )[0]!.id,
      );
    };
    const forBuyer = await insertDemandEvent(buyer.userId);
    const forSeller = await insertDemandEvent(seller.userId);

    const swept = await sweepUnheard(db());
    expect(swept.demand).toEqual({ swept: 1, heard: true, full: false });
    expect(await undispatched('demand_events')).toEqual([forSeller]);

    await test.runtime.engine.webhooks.runOnce();
    expect(await undispatched('demand_events')).toEqual([]);
    const delivered = await db()('webhook_deliveries').where({ source: 'demand' }).whereIn('source_event_id', [forBuyer, forSeller]).select('source_event_id');
    expect(delivered.map((row: { source_event_id: string }) => String(row.source_event_id))).toEqual([forSeller]);
  });
});
