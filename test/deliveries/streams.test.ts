import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp, withBrokenBus } from '../helpers/app.ts';
import { act, agentMarket, buy, credit, humanMarket } from '../helpers/market.ts';
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

const statuses = (received: { data: { data: { transaction: { status: string } } } }[]) => received.map((event) => event.data.data.transaction.status);

async function purchase() {
  const market = await agentMarket(test);
  const { id } = await buy(test, market.buyer, market.capability.id);
  return { ...market, id };
}

async function runToSettlement({ buyer, seller, id }: Awaited<ReturnType<typeof purchase>>) {
  await act(test, buyer, id, 'freeze').expect(200);
  await act(test, seller, id, 'accept').expect(200);
  await act(test, seller, id, 'deliver', { result_payload: { answer: 42 } }).expect(200);
  await act(test, buyer, id, 'confirm').expect(200);
}

describe('GET /api/v1/transactions/{id}/events', () => {
  it('streams every change in order, exactly once, with the sequence as event id', async () => {
    const deal = await purchase();
    const client = openEventSource(`${server.url}/api/v1/transactions/${deal.id}/events`, deal.seller.headers);
    await client.opened;
    await runToSettlement(deal);
    await expect.poll(() => client.received.length).toBe(5);
    client.close();
    expect(client.received.map((event) => event.id)).toEqual(['1', '2', '3', '4', '5']);
    expect(statuses(client.received)).toEqual(['pending_freeze', 'frozen', 'accepted', 'delivered', 'settled']);
    expect(client.received.map((event) => event.type)).toEqual(client.received.map((event) => `transaction.${event.data.data.transaction.status}`));
  });

  it('resumes after Last-Event-ID with nothing missing and nothing repeated', async () => {
    const deal = await purchase();
    await act(test, deal.buyer, deal.id, 'freeze').expect(200);
    await act(test, deal.seller, deal.id, 'accept').expect(200);
    await act(test, deal.seller, deal.id, 'deliver', { result_payload: {} }).expect(200);
    const resumed = openEventSource(`${server.url}/api/v1/transactions/${deal.id}/events`, { ...deal.buyer.headers, 'Last-Event-ID': '2' });
    await resumed.opened;
    await act(test, deal.buyer, deal.id, 'confirm').expect(200);
    await expect.poll(() => resumed.received.length).toBe(3);
    resumed.close();
    expect(resumed.received.map((event) => event.id)).toEqual(['3', '4', '5']);
  });

  it('fills a gap from the database when a live message was lost', async () => {
    const deal = await purchase();
    const client = openEventSource(`${server.url}/api/v1/transactions/${deal.id}/events`, deal.buyer.headers);
    await client.opened;
    await expect.poll(() => client.received.length).toBe(1);
    // The bus loses the freeze event.
    await withBrokenBus(test, 'lose', () => act(test, deal.buyer, deal.id, 'freeze').expect(200));
    await act(test, deal.seller, deal.id, 'accept').expect(200);
    await expect.poll(() => client.received.length).toBe(3);
    client.close();
    expect(statuses(client.received)).toEqual(['pending_freeze', 'frozen', 'accepted']);
  });

  it('is republished by the relay when its instance never published it', async () => {
    const deal = await purchase();
    const client = openEventSource(`${server.url}/api/v1/transactions/${deal.id}/events`, deal.buyer.headers);
    await client.opened;
    await expect.poll(() => client.received.length).toBe(1);
    // As if the instance died between COMMIT and publish.
    await withBrokenBus(test, 'fail', () => act(test, deal.buyer, deal.id, 'freeze').expect(200));
    test.clock.advanceMs(5000);
    expect(await test.runtime.engine.relay.runOnce()).toBeGreaterThanOrEqual(1);
    await expect.poll(() => client.received.length).toBe(2);
    expect(await test.runtime.engine.relay.runOnce()).toBe(0);
    client.close();
    const unpublished = await test.runtime.database
      .db('unpublished_events as queued')
      .join('outbox_events as event', 'event.id', 'queued.event_id')
      .where({ 'queued.feed': 'outbox_events', 'event.transaction_id': deal.id });
    expect(unpublished).toEqual([]);
  });

  it('sends headers that survive proxies and no compression', async () => {
    const deal = await purchase();
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/transactions/${deal.id}/events`, {
      headers: { ...deal.buyer.headers, 'Accept-Encoding': 'gzip' },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toContain('no-transform');
    expect(response.headers.get('x-accel-buffering')).toBe('no');
    expect(response.headers.get('content-encoding') ?? 'identity').toBe('identity');
    controller.abort();
  });

  it('answers a stranger, the other space and a missing transaction with the same 4040', async () => {
    const deal = await purchase();
    const stranger = await createAgent(test);
    const human = await signUpHuman(test);
    const forStranger = await test.http.get(`/api/v1/transactions/${deal.id}/events`).set(stranger.headers).expect(404);
    const forHuman = await test.http.get(`/api/v1/transactions/${deal.id}/events`).set(human.headers).expect(404);
    const missing = await test.http.get(`/api/v1/transactions/${crypto.randomUUID()}/events`).set(deal.buyer.headers).expect(404);
    for (const response of [forStranger, forHuman, missing]) expect(response.body.code).toBe(4040);
  });

  it('refuses no credentials, mixed credentials and a malformed Last-Event-ID', async () => {
    const deal = await purchase();
    const human = await signUpHuman(test);
    expect((await test.http.get(`/api/v1/transactions/${deal.id}/events`).expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .get(`/api/v1/transactions/${deal.id}/events`)
          .set({ ...deal.buyer.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
    expect((await test.http.get(`/api/v1/transactions/${deal.id}/events`).set(deal.buyer.headers).set('Last-Event-ID', 'abc').expect(400)).body.code).toBe(
      4000,
    );
    expect((await test.http.get('/api/v1/transactions/not-a-uuid/events').set(deal.buyer.headers).expect(400)).body.code).toBe(4000);
  });
});

describe('GET /api/v1/transactions/events', () => {
  it("streams all of the caller's transactions from now on, in the caller's own order", async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const earlier = await buy(test, buyer, capability.id); // before subscribing: not replayed
    const client = openEventSource(`${server.url}/api/v1/transactions/events`, buyer.headers);
    await client.opened;
    const first = await buy(test, buyer, capability.id);
    const second = await buy(test, buyer, capability.id);
    await act(test, buyer, first.id, 'freeze').expect(200);
    await act(test, seller, first.id, 'accept').expect(200);
    await act(test, buyer, second.id, 'cancel').expect(200);
    await expect.poll(() => client.received.length).toBe(5);
    client.close();
    expect(client.received.every((event) => event.data.transaction_id !== earlier.id)).toBe(true);
    const ids = client.received.map((event) => Number(event.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(5);
  });

  it('replays from Last-Event-ID and never shows another user or the other space', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const other = await agentMarket(test, '100.00');
    const deal = await buy(test, buyer, capability.id);
    await act(test, buyer, deal.id, 'freeze').expect(200);
    await buy(test, other.buyer, other.capability.id);
    // The seller's own user id, signed in as a human, buys and freezes in the human space (CNY):
    // events of the same user that the agent stream must not show, and the human stream must.
    const sellerAsHuman = { userId: seller.userId, headers: { Authorization: `Bearer ${test.runtime.engine.dependencies.jwt.sign(seller.userId).token}` } };
    const human = await humanMarket(test, '100.00');
    await credit(test, seller.userId, '100.00', 'CNY');
    const humanDeal = await buy(test, sellerAsHuman, human.capability.id);
    await act(test, sellerAsHuman, humanDeal.id, 'freeze').expect(200);
    expect(humanDeal.currency).toBe('CNY');

    const agentStream = openEventSource(`${server.url}/api/v1/transactions/events`, { ...seller.headers, 'Last-Event-ID': '0' });
    const humanStream = openEventSource(`${server.url}/api/v1/transactions/events`, { ...sellerAsHuman.headers, 'Last-Event-ID': '0' });
    await Promise.all([agentStream.opened, humanStream.opened]);
    await expect.poll(() => agentStream.received.length).toBe(2);
    await expect.poll(() => humanStream.received.length).toBe(2);
    // Anything more would have arrived with the replay; give a live event no chance to hide.
    await new Promise((resolve) => setTimeout(resolve, 200));
    agentStream.close();
    humanStream.close();
    expect(agentStream.received.map((event) => event.data.transaction_id)).toEqual([deal.id, deal.id]);
    expect(humanStream.received.map((event) => event.data.transaction_id)).toEqual([humanDeal.id, humanDeal.id]);
  });

  it("shows a party no count of the other party's business: live or replayed, an event holds only the transaction's own position", async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const otherBuyer = await createAgent(test);
    await credit(test, otherBuyer.userId, '100.00');
    // The seller's other business: each purchase is an event in the seller's stream of all their transactions.
    for (let index = 0; index < 3; index++) await buy(test, otherBuyer, capability.id);
    const live = openEventSource(`${server.url}/api/v1/transactions/events`, buyer.headers);
    await live.opened;
    const deal = await buy(test, buyer, capability.id);
    await act(test, buyer, deal.id, 'freeze').expect(200);
    await expect.poll(() => live.received.length).toBe(2);
    live.close();
    const replayed = openEventSource(`${server.url}/api/v1/transactions/events`, { ...buyer.headers, 'Last-Event-ID': '0' });
    await expect.poll(() => replayed.received.length).toBe(2);
    replayed.close();
    for (const event of [...live.received, ...replayed.received]) {
      expect(Object.keys(event.data).sort()).toEqual(
        ['buyer_user_id', 'created_at', 'data', 'id', 'seller_user_id', 'transaction_id', 'transaction_sequence', 'type'].sort(),
      );
    }
    expect(live.received.map((event) => event.id)).toEqual(['1', '2']);
    expect(replayed.received.map((event) => event.id)).toEqual(['1', '2']);
  });

  it('answers HEAD as GET would, without a stream: it ends, holds no stream place, and refuses whom GET refuses', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const stranger = await createAgent(test);
    const deal = await buy(test, buyer, capability.id);
    for (let index = 0; index < limits.sseStreamsPerCredentialMax + 5; index++) {
      const head = await test.http.head('/api/v1/transactions/events').set(buyer.headers).expect(200);
      expect(head.headers['content-type']).toMatch(/^text\/event-stream/);
    }
    await test.http.head(`/api/v1/transactions/${deal.id}/events`).set(buyer.headers).expect(200);
    await test.http.head(`/api/v1/transactions/${deal.id}/events`).set(stranger.headers).expect(404);
    await test.http.head('/api/v1/transactions/events').expect(401);
    // Every place is still free: a real stream opens after more HEADs than the cap.
    const client = openEventSource(`${server.url}/api/v1/transactions/events`, buyer.headers);
    await client.opened;
    client.close();
    // A bad position is named where it was sent.
    const byQuery = await test.http.get('/api/v1/transactions/events?last_event_id=abc').set(buyer.headers).expect(400);
    expect(byQuery.body.data.errors).toEqual([{ path: 'query.last_event_id', message: 'must be a sequence number' }]);
    const byHeader = await test.http
      .get('/api/v1/transactions/events')
      .set({ ...buyer.headers, 'Last-Event-ID': 'abc' })
      .expect(400);
    expect(byHeader.body.data.errors).toEqual([{ path: 'header.Last-Event-ID', message: 'must be a sequence number' }]);
  });
});
