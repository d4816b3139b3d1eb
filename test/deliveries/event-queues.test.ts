import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationSource } from '../../src/db/migrate.ts';
import { startTestApp, type TestApp, withBrokenBus } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * What is still owed for an event lives in two narrow queues, not in its row
 * (db/migrations/072_event_queues.ts, docs/decisions/streams-and-deliveries.md "What is still
 * owed, in queues of its own"): the database queues every event an event table is given, the
 * publisher and the webhook dispatcher take their rows off when done, and the event's own row is
 * never written again.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const db = () => test.runtime.engine.dependencies.db;

/** Where each outbox row of transaction `id` physically is, and which transaction wrote it: a rewrite of the row changes both. */
const rowVersionsOf = async (id: string) =>
  (
    (await db().raw(`SELECT id::text, ctid::text, xmin::text FROM outbox_events WHERE transaction_id = ? ORDER BY id`, [id])) as {
      rows: { id: string; ctid: string; xmin: string }[];
    }
  ).rows;

/** The (queue, table) pairs that hold event `eventId` of `table`. */
async function queuesHolding(table: string, eventId: string): Promise<string[]> {
  const held: string[] = [];
  for (const queue of ['unpublished_events', 'undispatched_events']) {
    if (await db()(queue).where({ feed: table, event_id: eventId }).first()) held.push(queue);
  }
  return held;
}

const queuedOf = async (queue: string, id: string) =>
  (
    await db()(`${queue} as queued`)
      .join('outbox_events as event', 'event.id', 'queued.event_id')
      .where({ 'queued.feed': 'outbox_events', 'event.transaction_id': id })
      .orderBy('event.id')
      .select('event.id')
  ).map((row: { id: string }) => String(row.id));

describe('the queues of what is owed for an event', () => {
  it('hold a new event until it is published and dispatched, and the event row stays as it was inserted', async () => {
    const { buyer, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    const inserted = await rowVersionsOf(id);
    expect(inserted).toHaveLength(2);
    // Published once committed (the publisher takes them off in its next batch); the dispatcher has not run.
    await expect.poll(() => queuedOf('unpublished_events', id)).toEqual([]);
    expect(await queuedOf('undispatched_events', id)).toEqual(inserted.map((row) => row.id));

    await test.runtime.engine.webhooks.runOnce();

    expect(await queuedOf('undispatched_events', id)).toEqual([]);
    expect(await rowVersionsOf(id)).toEqual(inserted);
    // The freeze's event is still the version its move's statement wrote with the freeze's ledger
    // entries (nothing rewrites those), whenever the publisher took it off its queue.
    const { rows: entries } = (await db().raw(`SELECT DISTINCT xmin::text FROM ledger_entries WHERE biz_ref_id = ?`, [id])) as { rows: { xmin: string }[] };
    expect(entries.map((entry) => entry.xmin)).toEqual([inserted[1]!.xmin]);
  });

  it('are filled by the database for every writer of an event table, with the duties of that table', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    // Written as a writer that knows nothing of the queues would: the trigger queues the rows.
    const [outbox] = (await db()('outbox_events')
      .insert({
        transaction_id: id,
        transaction_sequence: 99,
        buyer_user_id: buyer.userId,
        buyer_sequence: 99_001,
        seller_user_id: seller.userId,
        seller_sequence: 99_001,
        event_type: 'transaction.created',
        payload: {},
        created_at: new Date(),
      })
      .returning('id')) as { id: string }[];
    const [demand] = (await db()('demand_events')
      .insert({
        demand_id: id,
        capability_id: capability.id,
        recipient_user_id: buyer.userId,
        space: 'agent',
        type: 'demand.matched',
        payload: {},
        created_at: new Date(),
      })
      .returning('id')) as { id: string }[];

    expect(await queuesHolding('outbox_events', String(outbox!.id))).toEqual(['unpublished_events', 'undispatched_events']);
    // Demand matches go to webhooks only: nothing publishes them on the bus.
    expect(await queuesHolding('demand_events', String(demand!.id))).toEqual(['undispatched_events']);

    // An event deleted by anyone takes its queue rows with it.
    await db()('outbox_events').where({ id: outbox!.id }).del();
    await db()('demand_events').where({ id: demand!.id }).del();
    expect(await queuesHolding('outbox_events', String(outbox!.id))).toEqual([]);
    expect(await queuesHolding('demand_events', String(demand!.id))).toEqual([]);
  });

  it('refuse a row for a table that is not an event table', async () => {
    await expect(db()('undispatched_events').insert({ feed: 'transactions', event_id: 1 })).rejects.toThrow(/check constraint/i);
  });
});

describe('the relay', () => {
  it('publishes each event the bus missed once, however many instances relay at the same time', async () => {
    const { buyer, capability } = await agentMarket(test);
    // An event published before may still be on the queue (its mark is flushed every
    // publishedMarkFlushMs); relayed now, it is not counted with the missed ones below.
    test.clock.advanceMs(5_000);
    await test.runtime.engine.relay.runOnce();
    const missed = await withBrokenBus(test, 'fail', async () => {
      const ids: string[] = [];
      for (let index = 0; index < 5; index++) ids.push((await buy(test, buyer, capability.id)).id);
      return ids;
    });
    const queued = async () => (await Promise.all(missed.map((id) => queuedOf('unpublished_events', id)))).flat();
    expect(await queued()).toHaveLength(5);
    const heard: string[] = [];
    const stop = await test.runtime.bus.subscribe('marketplace:events', (message) => {
      const event = JSON.parse(message) as { transaction_id: string; id: string };
      if (missed.includes(event.transaction_id)) heard.push(event.id);
    });
    try {
      test.clock.advanceMs(5_000);
      const relayed = await Promise.all([1, 2, 3, 4].map(() => test.runtime.engine.relay.runOnce()));

      expect(relayed.reduce((sum, count) => sum + count, 0)).toBe(5);
      await expect.poll(() => heard.length).toBe(5);
      expect(new Set(heard).size).toBe(5);
      expect(await queued()).toEqual([]);
    } finally {
      await stop();
    }
  });
});

describe('the migration to the queues', () => {
  it('going down and up again keeps what is owed, and marks made in between take rows off the queues', async () => {
    const app = await startTestApp();
    try {
      const appDb = app.runtime.engine.dependencies.db;
      const downTo = async (version: string) => {
        while ((await appDb.migrate.currentVersion({ migrationSource })) >= version) await appDb.migrate.down({ migrationSource });
      };
      const { buyer, capability } = await agentMarket(app);
      const done = (await buy(app, buyer, capability.id)).id;
      await act(app, buyer, done, 'freeze').expect(200);
      await app.runtime.engine.webhooks.runOnce();
      const owed = (await buy(app, buyer, capability.id)).id;
      await expect.poll(async () => Number((await appDb('unpublished_events').count<{ count: string }[]>('* as count'))[0]!.count)).toBe(0);
      // As if the bus had been down for this one: it is still owed to both.
      const owedIds = (await appDb('outbox_events').where({ transaction_id: owed }).orderBy('id').select('id')).map((row: { id: string }) => String(row.id));
      await appDb('unpublished_events').insert(owedIds.map((eventId) => ({ feed: 'outbox_events', event_id: eventId })));
      const queues = async () => ({
        unpublished: (await appDb('unpublished_events').orderBy('event_id').select('event_id')).map((row: { event_id: string }) => String(row.event_id)),
        undispatched: (await appDb('undispatched_events').orderBy('event_id').select('event_id')).map((row: { event_id: string }) => String(row.event_id)),
      });
      expect(await queues()).toEqual({ unpublished: owedIds, undispatched: owedIds });

      // Back to the columns (073 undone): each row says what the queues said.
      await downTo('073');
      const marks = async (id: string) =>
        (await appDb('outbox_events').where({ transaction_id: id }).select('published_at', 'dispatched_at')) as {
          published_at: Date | null;
          dispatched_at: Date | null;
        }[];
      expect((await marks(done)).map((row) => [row.published_at !== null, row.dispatched_at !== null])).toEqual([
        [true, true],
        [true, true],
      ]);
      expect((await marks(owed)).map((row) => [row.published_at !== null, row.dispatched_at !== null])).toEqual([[false, false]]);
      // An instance of the earlier version marks what it dispatched: the mark takes the row off the queue.
      await appDb('outbox_events').where({ transaction_id: owed }).update({ dispatched_at: new Date() });
      expect(await queues()).toEqual({ unpublished: owedIds, undispatched: [] });

      await downTo('072');
      await appDb.migrate.latest({ migrationSource });
      expect(await queues()).toEqual({ unpublished: owedIds, undispatched: [] });
    } finally {
      await app.close();
    }
  });
});

describe('the webhook dispatcher under a stream of events', () => {
  it('never reads the payload of an event no subscription hears, and reads it for one that does', async () => {
    const responses: { sql: string; rows: object[] }[] = [];
    const onResponse = (response: unknown, query: { sql: string }) => {
      const rows = Array.isArray(response) ? (response as object[]) : [];
      responses.push({ sql: query.sql, rows });
    };
    const payloadsRead = () => responses.filter(({ rows }) => rows.some((row) => 'payload' in row)).length;
    const { buyer, capability } = await agentMarket(test);
    await buy(test, buyer, capability.id);
    db().on('query-response', onResponse);
    try {
      await test.runtime.engine.webhooks.runOnce();
      expect(await db()('undispatched_events').where({ feed: 'outbox_events' }).first()).toBeUndefined();
      expect(payloadsRead()).toBe(0);

      await test.http
        .post('/api/v1/webhooks')
        .set(buyer.headers)
        .send({ url: 'https://receiver.example/hook', event_types: ['transaction.*'] })
        .expect(201);
      await buy(test, buyer, capability.id);
      await test.runtime.engine.webhooks.runOnce();
      expect(payloadsRead()).toBeGreaterThan(0);
    } finally {
      db().off('query-response', onResponse);
    }
  });

  it('takes the events that commit while it lingers in one pass, not a pass each, while their webhooks are sent', async () => {
    const app = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
    const receiver = await startReceiver();
    const appDb = app.runtime.engine.dependencies.db;
    const passes: string[] = [];
    const undispatched = async () => Number((await appDb('undispatched_events').count<{ count: string }[]>('* as count'))[0]!.count);
    const onQuery = (query: { sql: string; __knexTxId?: string }) => {
      if (query.sql.startsWith('delete from "undispatched_events"') && query.__knexTxId) passes.push(query.__knexTxId);
    };
    try {
      const { buyer, capability } = await agentMarket(app);
      await app.http
        .post('/api/v1/webhooks')
        .set(buyer.headers)
        .send({ url: receiver.url('/hook'), event_types: ['transaction.*'] })
        .expect(201);
      // No periodic pass in this test; a pass that catches up lingers 3 s before the next one,
      // while the sends (each of which kicks a pass) go on.
      app.runtime.engine.webhooks.start(3_600_000, 3_000);
      appDb.on('query', onQuery);
      await buy(app, buyer, capability.id);
      app.runtime.engine.webhooks.kick();
      await expect.poll(undispatched).toBe(0);
      expect(passes).toHaveLength(1);
      for (let index = 0; index < 6; index++) await buy(app, buyer, capability.id);
      await expect.poll(undispatched, { timeout: 10_000 }).toBe(0);
      expect(passes).toHaveLength(2);
      await expect.poll(() => receiver.at('/hook').length, { timeout: 10_000 }).toBe(7);
    } finally {
      appDb.off('query', onQuery);
      app.runtime.engine.webhooks.stop();
      await receiver.close();
      await app.close();
    }
  });
});
