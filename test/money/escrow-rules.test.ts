import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, raceTest } from '../helpers/app.ts';
import { act, admin, agentMarket, balance, buy } from '../helpers/market.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ AUTO_CONFIRM_HOURS: '72', DELIVERY_DEADLINE_HOURS: '48' });
});
afterAll(() => test.close());

const hourMs = 3600 * 1000;

async function delivered(funds = '100.00') {
  const market = await agentMarket(test, funds);
  const { id } = await buy(test, market.buyer, market.capability.id);
  await act(test, market.buyer, id, 'freeze').expect(200);
  await act(test, market.seller, id, 'accept').expect(200);
  await act(test, market.seller, id, 'deliver', { result_payload: { text: 'hello' } }).expect(200);
  return { ...market, id };
}

describe('auto-confirm sweeper', () => {
  it('settles a delivered transaction only once auto_confirm_at has passed', async () => {
    const { buyer, seller, id } = await delivered();
    expect(await test.runtime.engine.sweeper.runOnce()).toBe(0);
    test.clock.advanceMs(72 * hourMs + 1000);
    expect(await test.runtime.engine.sweeper.runOnce()).toBeGreaterThanOrEqual(1);
    const after = (await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200)).body.data;
    expect(after.status).toBe('settled');
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });
    expect(await balance(test, buyer)).toMatchObject({ available: '90.00', frozen: '0.00' });
  });

  it(raceTest('never settles twice when several sweeps run at the same time'), async () => {
    const markets = await Promise.all([delivered(), delivered(), delivered()]);
    test.clock.advanceMs(73 * hourMs);
    const counts = await Promise.all([1, 2, 3, 4].map(() => test.runtime.engine.sweeper.runOnce()));
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(3);
    for (const market of markets) expect(await balance(test, market.seller)).toMatchObject({ available: '10.00' });
  });

  it('runs on its own at the configured interval', async () => {
    const { buyer, id } = await delivered();
    test.clock.advanceMs(73 * hourMs);
    test.runtime.engine.sweeper.start(20);
    try {
      await expect.poll(async () => (await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers)).body.data.status, { timeout: 5000 }).toBe('settled');
    } finally {
      test.runtime.engine.sweeper.stop();
    }
  });
});

describe('disputes', () => {
  it('lets the buyer dispute before auto_confirm_at and the operator refund', async () => {
    const { buyer, seller, id } = await delivered();
    expect((await act(test, buyer, id, 'dispute', { reason: 'wrong output' }).expect(200)).body.data.status).toBe('disputed');
    // A disputed transaction is not auto-confirmed, however late it gets.
    test.clock.advanceMs(100 * hourMs);
    await test.runtime.engine.sweeper.runOnce();
    const refunded = await test.http.post(`/api/v1/admin/transactions/${id}/resolve`).set(admin).send({ outcome: 'refund' }).expect(200);
    expect(refunded.body.data.status).toBe('refunded');
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect(await balance(test, seller)).toMatchObject({ available: '0.00' });
    const history = (await test.http.get('/api/v1/wallet/transactions?type=refund').set(buyer.headers).expect(200)).body.data;
    expect(history.items.map((item: { amount: string }) => item.amount).sort()).toEqual(['-10.00', '10.00']);
  });

  it('lets the operator settle a dispute for the seller', async () => {
    const { buyer, seller, id } = await delivered();
    await act(test, buyer, id, 'dispute').expect(200);
    expect((await test.http.post(`/api/v1/admin/transactions/${id}/resolve`).set(admin).send({ outcome: 'settle' }).expect(200)).body.data.status).toBe(
      'settled',
    );
    expect(await balance(test, seller)).toMatchObject({ available: '10.00' });
  });

  it('refuses a dispute once auto_confirm_at has passed', async () => {
    const { buyer, id } = await delivered();
    test.clock.advanceMs(72 * hourMs + 1000);
    const response = await act(test, buyer, id, 'dispute').expect(409);
    expect(response.body).toMatchObject({ code: 4090, data: { status: 'delivered', action: 'dispute' } });
  });
});

describe('cancelling an accepted purchase', () => {
  it('is refused before the delivery deadline and allowed after it, releasing the funds', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '50.00');
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    const accepted = (await act(test, seller, id, 'accept').expect(200)).body.data;
    expect(new Date(accepted.delivery_deadline).getTime() - new Date(accepted.accepted_at).getTime()).toBe(48 * hourMs);
    expect((await act(test, buyer, id, 'cancel').expect(409)).body.data).toEqual({ status: 'accepted', action: 'cancel' });
    test.clock.advanceMs(48 * hourMs + 1000);
    expect((await act(test, buyer, id, 'cancel').expect(200)).body.data.status).toBe('cancelled_by_buyer');
    expect(await balance(test, buyer)).toMatchObject({ available: '50.00', frozen: '0.00' });
  });

  it('uses booked_hours as the delivery deadline of a per_hour purchase', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '500.00', { pricing_model: 'per_hour', price_ut: '3.00' });
    const created = await buy(test, buyer, capability.id, { booked_hours: 5 });
    expect(created.price_ut).toBe('15.00');
    await act(test, buyer, created.id, 'freeze').expect(200);
    const accepted = (await act(test, seller, created.id, 'accept').expect(200)).body.data;
    expect(new Date(accepted.delivery_deadline).getTime() - new Date(accepted.accepted_at).getTime()).toBe(5 * hourMs);
  });
});

describe('auto-accept', () => {
  it('accepts on freeze when the price reaches auto_accept_min_ut, with two events', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '20.00', auto_accept_min_ut: '20.00' });
    const { id } = await buy(test, buyer, capability.id);
    const frozen = (await act(test, buyer, id, 'freeze').expect(200)).body.data;
    expect(frozen.status).toBe('accepted');
    expect(frozen.frozen_at).not.toBeNull();
    const events = await test.runtime.database.db('outbox_events').where({ transaction_id: id }).orderBy('transaction_sequence');
    expect(events.map((event) => event.event_type)).toEqual(['transaction.pending_freeze', 'transaction.frozen', 'transaction.accepted']);
  });

  it('does not accept below the threshold', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00', { price_ut: '19.99', auto_accept_min_ut: '20.00' });
    const { id } = await buy(test, buyer, capability.id);
    expect((await act(test, buyer, id, 'freeze').expect(200)).body.data.status).toBe('frozen');
  });
});

describe('terms fixed at purchase', () => {
  it('takes the fee rate of the moment of purchase, whatever the configuration says at settlement', async () => {
    const config = test.runtime.engine.dependencies.config as { PLATFORM_FEE_BPS: number };
    const original = config.PLATFORM_FEE_BPS;
    config.PLATFORM_FEE_BPS = 1000; // 10 % when bought
    try {
      const { buyer, seller, capability } = await agentMarket(test, '100.00');
      const { id } = await buy(test, buyer, capability.id);
      config.PLATFORM_FEE_BPS = 5000; // changed while the money is in escrow
      await act(test, buyer, id, 'freeze').expect(200);
      await act(test, seller, id, 'accept').expect(200);
      await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200);
      await act(test, buyer, id, 'confirm').expect(200);
      expect(await balance(test, seller)).toMatchObject({ available: '9.00' });
    } finally {
      config.PLATFORM_FEE_BPS = original;
    }
  });

  it("keeps the buyer's dispute reason for the operator", async () => {
    const { buyer, seller, id } = await delivered();
    const disputed = (await act(test, buyer, id, 'dispute', { reason: 'the summary is of another PDF' }).expect(200)).body.data;
    expect(disputed.dispute_reason).toBe('the summary is of another PDF');
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(seller.headers).expect(200)).body.data.dispute_reason).toBe('the summary is of another PDF');
  });
});

describe('a sweep that meets a broken row', () => {
  it('passes over it and still settles the others', async () => {
    const broken = await delivered();
    const healthy = await delivered();
    // Damage the first buyer's frozen balance behind the engine's back: its settlement must fail.
    await test.runtime.database.db('accounts').where({ owner_user_id: broken.buyer.userId, currency: 'UT' }).update({ frozen: 0, available: 100_00 });
    test.clock.advanceMs(73 * hourMs);
    await test.runtime.engine.sweeper.runOnce();
    const status = async (deal: Awaited<ReturnType<typeof delivered>>) =>
      (await test.http.get(`/api/v1/transactions/${deal.id}`).set(deal.buyer.headers).expect(200)).body.data.status;
    expect(await status(broken)).toBe('delivered');
    expect(await status(healthy)).toBe('settled');
  });
});
