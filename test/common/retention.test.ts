import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { pruneOld, startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { rpcStreamResults } from '../helpers/rpc-stream.ts';
import { listen, openEventSource } from '../helpers/server.ts';

let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
});
afterAll(async () => {
  await server.close();
  await test.close();
});

const hourMs = 60 * 60 * 1000;
const db = () => test.runtime.engine.dependencies.db;
const retentionHours = () => test.config.OUTBOX_RETENTION_HOURS;

/** The outbox rows of transaction `id` still on the unpublished queue (db/migrations/072_event_queues.ts). */
const unpublishedOf = async (app: TestApp, id: string) =>
  (
    await app.runtime.engine.dependencies
      .db('unpublished_events as queued')
      .join('outbox_events as event', 'event.id', 'queued.event_id')
      .where({ 'queued.feed': 'outbox_events', 'event.transaction_id': id })
  ).length;

/** Puts the outbox rows of transaction `id` back on the unpublished queue, as if the bus had been down. */
const requeueUnpublished = async (id: string) =>
  db()
    .insert(db()('outbox_events').where({ transaction_id: id }).select(db().raw("'outbox_events'"), 'id'))
    .into(db().raw('unpublished_events (feed, event_id)'));

/** A transaction taken to `accepted` (3 events), with every event published. */
async function acceptedDeal() {
  const market = await agentMarket(test);
  const { id } = await buy(test, market.buyer, market.capability.id);
  await act(test, market.buyer, id, 'freeze').expect(200);
  await act(test, market.seller, id, 'accept').expect(200);
  await expect.poll(async () => unpublishedOf(test, id)).toBe(0);
  return { ...market, id };
}

const outboxSequences = async (id: string) =>
  ((await db()('outbox_events').where({ transaction_id: id }).orderBy('transaction_sequence')) as { transaction_sequence: number }[]).map(
    (row) => row.transaction_sequence,
  );

describe('the retention job', () => {
  it('deletes published events older than the window, and keeps unpublished and recent ones', async () => {
    const old = await acceptedDeal();
    const unpublished = await acceptedDeal();
    await requeueUnpublished(unpublished.id);
    test.clock.advanceMs((retentionHours() + 1) * hourMs);
    const recent = await acceptedDeal();

    await pruneOld(test);

    expect(await outboxSequences(old.id)).toEqual([]);
    expect(await outboxSequences(unpublished.id)).toEqual([1, 2, 3]);
    expect(await outboxSequences(recent.id)).toEqual([1, 2, 3]);
  });

  it('keeps old events the dispatcher still owes to webhooks, of transactions and of demand matches, until dispatched', async () => {
    await pruneOld(test);
    const owed = await acceptedDeal();
    const { buyer, capability } = await agentMarket(test);
    const [demand] = (await db()('demand_events')
      .insert({
        demand_id: owed.id,
        capability_id: capability.id,
        recipient_user_id: buyer.userId,
        space: 'agent',
        type: 'demand.matched',
        payload: {},
        created_at: test.runtime.engine.dependencies.now(),
      })
      .returning('id')) as { id: string }[];
    test.clock.advanceMs((retentionHours() + 1) * hourMs);

    // Published, but not yet dispatched: the retention job alone keeps them.
    await test.runtime.engine.retention.runOnce();
    expect(await outboxSequences(owed.id)).toEqual([1, 2, 3]);
    expect(await db()('demand_events').where({ id: demand!.id }).first()).toBeDefined();

    await pruneOld(test);
    expect(await outboxSequences(owed.id)).toEqual([]);
    expect(await db()('demand_events').where({ id: demand!.id }).first()).toBeUndefined();
  });

  it('deletes every expired idempotency key, over several batches, and keeps live ones', async () => {
    const at = test.runtime.engine.dependencies.now();
    const expired = new Date(at.getTime() - 1000);
    const live = new Date(at.getTime() + hourMs);
    // More than two batches of expired keys (a batch is limits.retentionBatchSize, 1,000).
    await db().raw(
      `INSERT INTO idempotency_keys (scope_hash, fingerprint, state, created_at, expires_at)
       SELECT md5(?::text || n::text) || md5(n::text), 'f', 'completed', ?, ? FROM generate_series(1, 2500) AS n`,
      [randomUUID(), expired, expired],
    );
    const liveHash = 'live'.padEnd(64, '0');
    await db()('idempotency_keys').insert({ scope_hash: liveHash, fingerprint: 'f', state: 'completed', created_at: at, expires_at: live });

    const { idempotencyKeys } = await pruneOld(test);

    expect(idempotencyKeys).toBeGreaterThanOrEqual(2500);
    expect(Number((await db()('idempotency_keys').where('expires_at', '<=', at).count('* as count'))[0]!.count)).toBe(0);
    expect(await db()('idempotency_keys').where({ scope_hash: liveHash }).first()).toBeDefined();
  });

  it('deletes each row once when several instances run it at the same time, and never an unpublished one', async () => {
    const deals = await Promise.all([1, 2, 3, 4].map(() => acceptedDeal()));
    const unpublished = deals[0]!;
    await requeueUnpublished(unpublished.id);
    test.clock.advanceMs((retentionHours() + 1) * hourMs);
    const oldRows = Number(
      (
        await db()('outbox_events')
          .whereNotIn('id', db()('unpublished_events').where({ feed: 'outbox_events' }).select('event_id'))
          .where('created_at', '<', new Date(test.clock.now.getTime() - retentionHours() * hourMs))
          .count('* as count')
      )[0]!.count,
    );

    const runs = await Promise.all([1, 2, 3, 4, 5, 6].map(() => pruneOld(test)));

    expect(runs.reduce((sum, run) => sum + run.outboxEvents, 0)).toBe(oldRows);
    for (const deal of deals.slice(1)) expect(await outboxSequences(deal.id)).toEqual([]);
    expect(await outboxSequences(unpublished.id)).toEqual([1, 2, 3]);
  });
});

describe('a configured retention window', () => {
  it('keeps events younger than OUTBOX_RETENTION_HOURS and deletes older ones', async () => {
    const short = await startTestApp({ OUTBOX_RETENTION_HOURS: '2' });
    try {
      const market = await agentMarket(short);
      const { id } = await buy(short, market.buyer, market.capability.id);
      await expect.poll(async () => unpublishedOf(short, id)).toBe(0);
      short.clock.advanceMs(1 * hourMs);
      expect((await pruneOld(short)).outboxEvents).toBe(0);
      short.clock.advanceMs(2 * hourMs);
      expect((await pruneOld(short)).outboxEvents).toBe(1);
    } finally {
      await short.close();
    }
  });
});

describe('a stream resumed from a pruned position', () => {
  it('gets one too_old event saying where to read the current state, then the live events', async () => {
    const deal = await acceptedDeal();
    test.clock.advanceMs((retentionHours() + 1) * hourMs);
    await pruneOld(test);
    expect(await outboxSequences(deal.id)).toEqual([]);

    const client = openEventSource(`${server.url}/api/v1/transactions/${deal.id}/events`, { ...deal.buyer.headers, 'Last-Event-ID': '1' });
    await client.opened;
    await expect.poll(() => client.received.length).toBe(1);
    await act(test, deal.seller, deal.id, 'deliver', { result_payload: { answer: 42 } }).expect(200);
    await expect.poll(() => client.received.length).toBe(2);
    client.close();

    const [tooOld, live] = client.received;
    expect(tooOld).toMatchObject({
      type: 'too_old',
      id: '3',
      data: { code: 'too_old', requested_after: '1', resumed_after: '3', retention_hours: retentionHours(), current_state: `/api/v1/transactions/${deal.id}` },
    });
    expect(live).toMatchObject({ type: 'transaction.delivered', id: '4' });
  });

  it('on a user stream, resumes after the oldest event still kept', async () => {
    const deal = await acceptedDeal();
    const buyerHead = String((await db()('event_streams').where({ owner_user_id: deal.buyer.userId }).first('last_sequence')).last_sequence);
    await db()('outbox_events')
      .where({ transaction_id: deal.id })
      .where('transaction_sequence', '<', 3)
      .update({ created_at: new Date(0) });
    await pruneOld(test);

    const client = openEventSource(`${server.url}/api/v1/transactions/events`, { ...deal.buyer.headers, 'Last-Event-ID': '0' });
    await client.opened;
    await expect.poll(() => client.received.length).toBe(2);
    client.close();
    expect(client.received[0]).toMatchObject({ type: 'too_old', data: { requested_after: '0', current_state: '/api/v1/transactions' } });
    expect(client.received[1]).toMatchObject({ type: 'transaction.accepted', id: buyerHead });
    expect(client.received[0]!.id).toBe(String(Number(buyerHead) - 1));
  });

  it('still gives a JSON-RPC client the current task when the history is gone', async () => {
    const deal = await acceptedDeal();
    test.clock.advanceMs((retentionHours() + 1) * hourMs);
    await pruneOld(test);
    await act(test, deal.seller, deal.id, 'deliver', { result_payload: { answer: 42 } }).expect(200);
    await expect.poll(async () => unpublishedOf(test, deal.id)).toBe(0);
    await db()('outbox_events')
      .where({ transaction_id: deal.id })
      .update({ created_at: new Date(0) });
    await pruneOld(test);

    const results = await rpcStreamResults(`${server.url}/api/v1/rpc`, deal.buyer, 'tasks/resubscribe', { id: deal.id }, { 'A2A-Version': '0.3' });
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ kind: 'task', status: { state: 'input-required' }, artifacts: [{ parts: [{ data: { answer: 42 } }] }] });
  });

  it('never reports too_old to streams resumed at the head while events are being committed', async () => {
    const market = await agentMarket(test, '1000.00');
    const ids = await Promise.all([1, 2, 3, 4, 5].map(async () => (await buy(test, market.buyer, market.capability.id)).id));
    const head = Number((await db()('event_streams').where({ owner_user_id: market.buyer.userId }).first('last_sequence')).last_sequence);
    const clients = [1, 2, 3, 4, 5, 6, 7, 8].map(() =>
      openEventSource(`${server.url}/api/v1/transactions/events`, { ...market.buyer.headers, 'Last-Event-ID': String(head) }),
    );
    await Promise.all([...clients.map((client) => client.opened), ...ids.map((id) => act(test, market.buyer, id, 'freeze').expect(200))]);
    for (const client of clients) await expect.poll(() => client.received.length).toBe(ids.length);
    for (const client of clients) client.close();
    const expected = ids.map((_, index) => String(head + index + 1));
    for (const client of clients) expect(client.received.map((event) => event.id)).toEqual(expected);
    for (const client of clients) expect(client.received.map((event) => event.type)).not.toContain('too_old');
  });
});

describe('the retention of device authorization requests', () => {
  const start = async () =>
    (await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'cursor' }).expect(201)).body.data as { device_code: string };
  const poll = (deviceCode: string) => test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: deviceCode });

  it('keeps an expired request for a day, so a late poll hears 4803, and deletes it after', async () => {
    const recent = await start();
    test.clock.advanceMs(limits.deviceCodeLifetimeSeconds * 1000 + 60_000);
    expect((await pruneOld(test)).deviceAuthorizations).toBe(0);
    // Expired a minute ago: kept, and the device is told it expired.
    expect((await poll(recent.device_code)).body.code).toBe(4803);
    const older = await start();
    test.clock.advanceMs(limits.deviceAuthorizationRetentionMs);
    // Expired more than a day ago: gone; expired less than a day ago: still there (an unknown
    // code and an expired one answer the same 4803, so the rows are counted).
    expect((await pruneOld(test)).deviceAuthorizations).toBe(1);
    expect(Number((await db()('device_authorizations').count<{ count: string }[]>('* as count'))[0]!.count)).toBe(1);
    expect((await poll(older.device_code)).body.code).toBe(4803);
  });
});
