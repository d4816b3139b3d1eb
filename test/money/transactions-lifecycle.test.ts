import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance, buy, humanMarket } from '../helpers/market.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PLATFORM_FEE_BPS: '250' });
});
afterAll(() => test.close());

describe('a full purchase', () => {
  it('freezes, accepts, delivers, confirms and pays the seller less the platform fee', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00', { price_ut: '40.00' });
    const created = await buy(test, buyer, capability.id);
    expect(created).toMatchObject({ status: 'pending_freeze', price_ut: '40.00', currency: 'UT', buyer_user_id: buyer.userId, seller_user_id: seller.userId });

    expect((await act(test, buyer, created.id, 'freeze').expect(200)).body.data.status).toBe('frozen');
    expect(await balance(test, buyer)).toEqual({ available: '60.00', frozen: '40.00', total: '100.00', currency: 'UT' });

    expect((await act(test, seller, created.id, 'accept').expect(200)).body.data.status).toBe('accepted');
    const delivered = (await act(test, seller, created.id, 'deliver', { result_payload: { summary: 'done' } }).expect(200)).body.data;
    expect(delivered).toMatchObject({ status: 'delivered', result_payload: { summary: 'done' } });
    expect(new Date(delivered.auto_confirm_at).getTime() - new Date(delivered.delivered_at).getTime()).toBe(72 * 3600 * 1000);

    const settled = (await act(test, buyer, created.id, 'confirm').expect(200)).body.data;
    expect(settled.status).toBe('settled');
    expect(settled.settled_at).not.toBeNull();
    expect(await balance(test, buyer)).toEqual({ available: '60.00', frozen: '0.00', total: '60.00', currency: 'UT' });
    // 2.5 % of 40.00 is 1.00.
    expect(await balance(test, seller)).toEqual({ available: '39.00', frozen: '0.00', total: '39.00', currency: 'UT' });
  });

  it('runs in CNY cash between humans', async () => {
    const { buyer, seller, capability } = await humanMarket(test, '50.00');
    const created = await buy(test, buyer, capability.id);
    expect(created.currency).toBe('CNY');
    await act(test, buyer, created.id, 'freeze').expect(200);
    expect(await balance(test, buyer, 'cash')).toMatchObject({ available: '40.00', frozen: '10.00' });
    expect(await balance(test, buyer, 'ut')).toMatchObject({ available: '0.00', frozen: '0.00' });
    await act(test, seller, created.id, 'reject').expect(200);
    expect(await balance(test, buyer, 'cash')).toMatchObject({ available: '50.00', frozen: '0.00' });
  });
});

describe("the buyer's input", () => {
  it('reaches the seller with the purchase', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const created = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', crypto.randomUUID())
      .send({ capability_id: capability.id, input: { url: 'https://example.com/a.pdf' }, note: 'Two paragraphs, please' })
      .expect(201);
    const seen = (await test.http.get(`/api/v1/transactions/${created.body.data.id}`).set(seller.headers).expect(200)).body.data;
    expect(seen).toMatchObject({ input: { url: 'https://example.com/a.pdf' }, note: 'Two paragraphs, please' });
  });
});
