import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, admin, balance, buy, createCapability, credit } from '../helpers/market.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PLATFORM_FEE_BPS: '250' });
});
afterAll(() => test.close());

type Headers = Record<string, string>;
interface HistoryItem {
  id: string;
  movement_id: string;
  type: string;
  amount: string;
  currency: string;
  bucket: string;
  balance_after: string;
  description: string;
  biz_ref_id: string | null;
  created_at: string;
}

const zero = (currency: 'UT' | 'CNY') => ({ available: '0.00', frozen: '0.00', total: '0.00', currency });
const history = (headers: Headers, query: Record<string, string | number> = {}) => test.http.get('/api/v1/wallet/transactions').set(headers).query(query);
const creditRequest = (body: unknown, headers: Headers = admin) =>
  test.http
    .post('/api/v1/admin/wallet/credit')
    .set(headers)
    .send(body as object);

/** Every page of the history through next_cursor. */
async function walkHistory(headers: Headers, query: Record<string, string | number>) {
  const seen: HistoryItem[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const response: { body: { data: { items: HistoryItem[]; next_cursor: string | null; has_more: boolean } } } = await history(
      headers,
      cursor ? { ...query, cursor } : query,
    ).expect(200);
    seen.push(...response.body.data.items);
    cursor = response.body.data.next_cursor;
    if (!cursor) {
      expect(response.body.data.has_more).toBe(false);
      return seen;
    }
    expect(response.body.data.has_more).toBe(true);
  }
  throw new Error('the cursor walk did not end');
}

/** A buyer with 100.00 UT who bought a 40.00 capability (settled) and cancelled a frozen 10.00 one. */
async function tradedMarket() {
  const buyer = await createAgent(test);
  const seller = await createAgent(test);
  await credit(test, buyer.userId, '100.00');
  const expensive = await createCapability(test, seller, { price_ut: '40.00' });
  const cheap = await createCapability(test, seller, { price_ut: '10.00' });
  const sale = await buy(test, buyer, expensive.id);
  await act(test, buyer, sale.id, 'freeze').expect(200);
  await act(test, seller, sale.id, 'accept').expect(200);
  await act(test, seller, sale.id, 'deliver', { result_payload: { done: true } }).expect(200);
  await act(test, buyer, sale.id, 'confirm').expect(200);
  const cancelled = await buy(test, buyer, cheap.id);
  await act(test, buyer, cancelled.id, 'freeze').expect(200);
  await act(test, buyer, cancelled.id, 'cancel').expect(200);
  return { buyer, seller, sale, cancelled };
}

describe('GET /api/v1/wallet/ and /api/v1/wallet', () => {
  it('answers both balance objects, zero for a new user, the same with and without the trailing slash', async () => {
    const agent = await createAgent(test);
    const withSlash = await test.http.get('/api/v1/wallet/').set(agent.headers).expect(200);
    const withoutSlash = await test.http.get('/api/v1/wallet').set(agent.headers).expect(200);
    expect(withSlash.body.code).toBe(0);
    expect(withSlash.body.data).toEqual({ ut: zero('UT'), cash: zero('CNY') });
    expect(withoutSlash.body.data).toEqual(withSlash.body.data);
  });

  it('shows available, frozen and total as two-decimal strings during a purchase', async () => {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    await credit(test, buyer.userId, '12.50');
    const capability = await createCapability(test, seller, { price_ut: '2.25' });
    const tx = await buy(test, buyer, capability.id);
    await act(test, buyer, tx.id, 'freeze').expect(200);
    for (const path of ['/api/v1/wallet/', '/api/v1/wallet']) {
      const data = (await test.http.get(path).set(buyer.headers).expect(200)).body.data;
      expect(data).toEqual({ ut: { available: '10.25', frozen: '2.25', total: '12.50', currency: 'UT' }, cash: zero('CNY') });
    }
  });

  it('shows the same balances to the same user whichever credential kind it uses', async () => {
    const human = await signUpHuman(test);
    await credit(test, human.userId, '3.00', 'CNY');
    await credit(test, human.userId, '4.00', 'UT');
    const data = (await test.http.get('/api/v1/wallet/').set(human.headers).expect(200)).body.data;
    expect(data).toEqual({
      ut: { available: '4.00', frozen: '0.00', total: '4.00', currency: 'UT' },
      cash: { available: '3.00', frozen: '0.00', total: '3.00', currency: 'CNY' },
    });
  });
});

describe('GET /api/v1/wallet/transactions', () => {
  it('records deposit, freeze, expense, income and unfreeze entries with exact balance_after', async () => {
    const { buyer, seller, sale, cancelled } = await tradedMarket();
    const response = await history(buyer.headers, { page_size: 100 }).expect(200);
    const items: HistoryItem[] = response.body.data.items;
    // Newest first.
    const ids = items.map((item) => BigInt(item.id));
    expect([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(ids);
    const summary = items
      .map(({ type, amount, bucket, balance_after, biz_ref_id, currency }) => ({ type, amount, bucket, balance_after, biz_ref_id, currency }))
      .reverse();
    expect(summary).toEqual([
      { type: 'deposit', amount: '100.00', bucket: 'available', balance_after: '100.00', biz_ref_id: null, currency: 'UT' },
      { type: 'freeze', amount: '-40.00', bucket: 'available', balance_after: '60.00', biz_ref_id: sale.id, currency: 'UT' },
      { type: 'freeze', amount: '40.00', bucket: 'frozen', balance_after: '40.00', biz_ref_id: sale.id, currency: 'UT' },
      { type: 'expense', amount: '-40.00', bucket: 'frozen', balance_after: '0.00', biz_ref_id: sale.id, currency: 'UT' },
      { type: 'freeze', amount: '-10.00', bucket: 'available', balance_after: '50.00', biz_ref_id: cancelled.id, currency: 'UT' },
      { type: 'freeze', amount: '10.00', bucket: 'frozen', balance_after: '10.00', biz_ref_id: cancelled.id, currency: 'UT' },
      { type: 'unfreeze', amount: '-10.00', bucket: 'frozen', balance_after: '0.00', biz_ref_id: cancelled.id, currency: 'UT' },
      { type: 'unfreeze', amount: '10.00', bucket: 'available', balance_after: '60.00', biz_ref_id: cancelled.id, currency: 'UT' },
    ]);
    expect(response.body.data).toMatchObject({ total: 8, page: 1, page_size: 100, has_more: false, next_cursor: null });
    // The two legs of each of the buyer's own moves (a freeze, an unfreeze) name one movement; moves differ.
    const byMovement = new Map<string, HistoryItem[]>();
    for (const item of items) byMovement.set(item.movement_id, [...(byMovement.get(item.movement_id) ?? []), item]);
    expect([...byMovement.values()].map((legs) => legs.map((leg) => leg.type).sort())).toEqual(
      expect.arrayContaining([['freeze', 'freeze'], ['unfreeze', 'unfreeze'], ['deposit'], ['expense']]),
    );
    expect(byMovement.size).toBe(5);
    for (const item of items) {
      expect(item.description).toEqual(expect.any(String));
      expect(new Date(item.created_at).toISOString()).toBe(item.created_at);
    }
    expect(await balance(test, buyer)).toEqual({ available: '60.00', frozen: '0.00', total: '60.00', currency: 'UT' });

    // The seller earned 40.00 less the 2.5 % platform fee.
    const sellerItems: HistoryItem[] = (await history(seller.headers).expect(200)).body.data.items;
    expect(sellerItems).toEqual([
      expect.objectContaining({ type: 'income', amount: '39.00', bucket: 'available', balance_after: '39.00', biz_ref_id: sale.id, currency: 'UT' }),
    ]);
  });

  it('filters by type', async () => {
    const { buyer } = await tradedMarket();
    const count = async (type: string) => {
      const data = (await history(buyer.headers, { type }).expect(200)).body.data;
      for (const item of data.items) expect(item.type).toBe(type);
      expect(data.total).toBe(data.items.length);
      return data.total;
    };
    expect(await count('deposit')).toBe(1);
    expect(await count('freeze')).toBe(4);
    expect(await count('unfreeze')).toBe(2);
    expect(await count('expense')).toBe(1);
    expect(await count('income')).toBe(0);
    expect(await count('refund')).toBe(0);
  });

  it("filters by currency, and the other space's currency finds nothing", async () => {
    const { buyer } = await tradedMarket();
    await credit(test, buyer.userId, '5.00', 'CNY');
    const cny = (await history(buyer.headers, { currency: 'CNY' }).expect(200)).body.data;
    expect(cny).toMatchObject({ total: 0, items: [] });
    const ut = (await history(buyer.headers, { currency: 'UT' }).expect(200)).body.data;
    expect(ut.total).toBe(8);
    for (const item of ut.items) expect(item.currency).toBe('UT');
    expect((await history(buyer.headers).expect(200)).body.data.total).toBe(8);
    const both = (await history(buyer.headers, { currency: 'UT', type: 'deposit' }).expect(200)).body.data;
    expect(both.items).toEqual([expect.objectContaining({ type: 'deposit', currency: 'UT', amount: '100.00' })]);
  });

  it('pages with page and page_size, reporting total and has_more', async () => {
    const { buyer } = await tradedMarket();
    const all: HistoryItem[] = (await history(buyer.headers, { page_size: 100 }).expect(200)).body.data.items;
    const pages = [];
    for (const page of [1, 2, 3]) pages.push((await history(buyer.headers, { page, page_size: 3 }).expect(200)).body.data);
    expect(pages.map((page) => [page.page, page.page_size, page.total, page.has_more, page.items.length])).toEqual([
      [1, 3, 8, true, 3],
      [2, 3, 8, true, 3],
      [3, 3, 8, false, 2],
    ]);
    expect(pages.flatMap((page) => page.items.map((item: HistoryItem) => item.id))).toEqual(all.map((item) => item.id));
    const beyond = (await history(buyer.headers, { page: 4, page_size: 3 }).expect(200)).body.data;
    expect(beyond).toMatchObject({ items: [], total: 8, has_more: false });
  });

  it('defaults to page 1 and page_size 20', async () => {
    const agent = await createAgent(test);
    expect((await history(agent.headers).expect(200)).body.data).toEqual({ items: [], total: 0, page: 1, page_size: 20, has_more: false, next_cursor: null });
  });

  it('walks every entry exactly once with next_cursor, even when entries are added between pages', async () => {
    const { buyer } = await tradedMarket();
    const all: HistoryItem[] = (await history(buyer.headers, { page_size: 100 }).expect(200)).body.data.items;
    expect(await walkHistory(buyer.headers, { page_size: 3 })).toEqual(all);
    expect((await walkHistory(buyer.headers, { page_size: 1 })).map((item) => item.id)).toEqual(all.map((item) => item.id));

    // Start a walk, add entries, finish the walk: the new entries are newer than the cursor.
    const first = (await history(buyer.headers, { page_size: 3 }).expect(200)).body.data;
    await credit(test, buyer.userId, '1.00');
    await credit(test, buyer.userId, '2.00');
    const rest = await walkHistory(buyer.headers, { page_size: 3, cursor: first.next_cursor });
    expect([...first.items, ...rest].map((item: HistoryItem) => item.id)).toEqual(all.map((item) => item.id));
    expect((await history(buyer.headers).expect(200)).body.data.total).toBe(10);
  });

  it('walks a filtered history with the cursor', async () => {
    const { buyer } = await tradedMarket();
    const walked = await walkHistory(buyer.headers, { page_size: 1, type: 'freeze' });
    expect(walked).toHaveLength(4);
    for (const item of walked) expect(item.type).toBe('freeze');
  });

  it('shows only the caller’s own entries', async () => {
    const { buyer } = await tradedMarket();
    const stranger = await createAgent(test);
    expect((await history(stranger.headers).expect(200)).body.data.total).toBe(0);
    const buyerIds = new Set(((await history(buyer.headers, { page_size: 100 }).expect(200)).body.data.items as HistoryItem[]).map((item) => item.id));
    expect(buyerIds.size).toBe(8);
  });

  it.each([
    ['an unknown type', { type: 'gift' }, 'query.type'],
    ['an unknown currency', { currency: 'USD' }, 'query.currency'],
    ['page 0', { page: 0 }, 'query.page'],
    ['a negative page', { page: -1 }, 'query.page'],
    ['a fractional page', { page: 1.5 }, 'query.page'],
    ['a non-numeric page', { page: 'first' }, 'query.page'],
    ['page_size 0', { page_size: 0 }, 'query.page_size'],
    ['page_size 101', { page_size: 101 }, 'query.page_size'],
    ['a cursor that is not one', { cursor: 'not-a-cursor' }, 'query.cursor'],
    ['a cursor of the wrong shape', { cursor: Buffer.from(JSON.stringify(['2024-01-01T00:00:00.000Z', randomUUID()])).toString('base64url') }, 'query.cursor'],
    ['a cursor with a non-integer id', { cursor: Buffer.from(JSON.stringify(['1; DROP TABLE users'])).toString('base64url') }, 'query.cursor'],
    ['a cursor with an id beyond bigint', { cursor: Buffer.from(JSON.stringify(['9999999999999999999'])).toString('base64url') }, 'query.cursor'],
  ])('refuses %s with 4000', async (_name, query, path) => {
    const agent = await createAgent(test);
    const response = await history(agent.headers, query).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('accepts page_size 1 and 100', async () => {
    const agent = await createAgent(test);
    expect((await history(agent.headers, { page_size: 1 }).expect(200)).body.data.page_size).toBe(1);
    expect((await history(agent.headers, { page_size: 100 }).expect(200)).body.data.page_size).toBe(100);
  });
});

describe('GET /api/v1/wallet/stats', () => {
  it('sums income, expense and deposits per currency after a settled sale', async () => {
    const { buyer, seller } = await tradedMarket();
    const buyerStats = (await test.http.get('/api/v1/wallet/stats').set(buyer.headers).expect(200)).body.data;
    expect(buyerStats.ut).toMatchObject({ currency: 'UT', income: '0.00', expense: '40.00', deposits: '100.00', frozen: '0.00' });
    expect(buyerStats.cash).toEqual({ currency: 'CNY', income: '0.00', expense: '0.00', deposits: '0.00', frozen: '0.00', settled_count: 0 });
    const sellerStats = (await test.http.get('/api/v1/wallet/stats').set(seller.headers).expect(200)).body.data;
    expect(sellerStats.ut).toEqual({ currency: 'UT', income: '39.00', expense: '0.00', deposits: '0.00', frozen: '0.00', settled_count: 1 });
  });

  it('counts a settled sale of a free capability in settled_count', async () => {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    const free = await createCapability(test, seller, { price_ut: '0' });
    const tx = await buy(test, buyer, free.id);
    await act(test, buyer, tx.id, 'freeze').expect(200);
    await act(test, seller, tx.id, 'accept').expect(200);
    await act(test, seller, tx.id, 'deliver', { result_payload: {} }).expect(200);
    expect((await act(test, buyer, tx.id, 'confirm').expect(200)).body.data.status).toBe('settled');
    // The capability itself says it sold once; the seller's statistics must agree.
    expect((await test.http.get(`/api/v1/capabilities/${free.id}`).set(seller.headers).expect(200)).body.data.total_sold).toBe(1);
    const stats = (await test.http.get('/api/v1/wallet/stats').set(seller.headers).expect(200)).body.data;
    expect(stats.ut).toEqual({ currency: 'UT', income: '0.00', expense: '0.00', deposits: '0.00', frozen: '0.00', settled_count: 1 });
  });

  it('shows what is frozen and the cash deposits of a human', async () => {
    const buyer = await signUpHuman(test);
    const seller = await signUpHuman(test);
    await credit(test, buyer.userId, '30.00', 'CNY');
    const capability = await createCapability(test, seller, { price_ut: '12.00' });
    const tx = await buy(test, buyer, capability.id);
    await act(test, buyer, tx.id, 'freeze').expect(200);
    const stats = (await test.http.get('/api/v1/wallet/stats').set(buyer.headers).expect(200)).body.data;
    expect(stats.cash).toMatchObject({ currency: 'CNY', deposits: '30.00', frozen: '12.00', expense: '0.00', income: '0.00' });
    expect(stats.ut).toMatchObject({ currency: 'UT', deposits: '0.00', frozen: '0.00' });
  });
});

describe('GET /api/v1/wallet/rates and /api/v1/wallet/exchange-rates/latest', () => {
  it.each(['/api/v1/wallet/rates', '/api/v1/wallet/exchange-rates/latest'])('%s serves the configured rate and fee', async (path) => {
    const agent = await createAgent(test);
    const data = (await test.http.get(path).set(agent.headers).expect(200)).body.data;
    expect(data).toMatchObject({ base: 'UT', rates: { CNY: '0.10' }, platform_fee_bps: 250, auto_confirm_hours: 72 });
    expect(typeof data.rates.CNY).toBe('string');
    expect(new Date(data.updated_at).toISOString()).toBe(data.updated_at);
  });

  it('serves the configured rate when it is set', async () => {
    const other = await startTestApp({ UT_TO_CNY_RATE: '0.125', PLATFORM_FEE_BPS: '0' });
    try {
      const human = await signUpHuman(other);
      const data = (await other.http.get('/api/v1/wallet/exchange-rates/latest').set(human.headers).expect(200)).body.data;
      expect(data).toMatchObject({ rates: { CNY: '0.125' }, platform_fee_bps: 0 });
    } finally {
      await other.close();
    }
  });
});

describe('wallet endpoints: who may call', () => {
  const paths = [
    '/api/v1/wallet/',
    '/api/v1/wallet',
    '/api/v1/wallet/transactions',
    '/api/v1/wallet/stats',
    '/api/v1/wallet/rates',
    '/api/v1/wallet/exchange-rates/latest',
  ];
  let agent: Actor & { apiKey: string };
  let human: Actor;
  beforeAll(async () => {
    agent = await createAgent(test);
    human = await signUpHuman(test);
  });

  it.each(paths)('GET %s without credentials is 4010', async (path) => {
    const response = await test.http.get(path).expect(401);
    expect(response.body).toMatchObject({ code: 4010, message: 'unauthenticated' });
  });

  it.each(paths)('GET %s with a bad bearer token is 4010', async (path) => {
    expect((await test.http.get(path).set({ Authorization: 'Bearer a.b.c' }).expect(401)).body.code).toBe(4010);
  });

  it.each(paths)('GET %s with an API key acting for an unlinked user is 4010', async (path) => {
    expect((await test.http.get(path).set({ 'X-Api-Key': agent.apiKey, 'X-Platform-User-Id': human.userId }).expect(401)).body.code).toBe(4010);
  });

  it.each(paths)('GET %s with mixed credentials is 4011', async (path) => {
    const response = await test.http
      .get(path)
      .set({ ...agent.headers, ...human.headers })
      .expect(400);
    expect(response.body).toMatchObject({ code: 4011, message: 'mixed_credentials' });
  });

  it('an anonymous caller learns nothing from validation: a bad history query without credentials is 4010', async () => {
    expect((await test.http.get('/api/v1/wallet/transactions').query({ page: 0 }).expect(401)).body.code).toBe(4010);
  });
});

describe('POST /api/v1/admin/wallet/credit', () => {
  let user: Actor & { token: string };
  beforeAll(async () => {
    user = await signUpHuman(test);
  });

  it.each([
    ['"12.50"', '12.50', '12.50'],
    ['12.5', 12.5, '12.50'],
    ['"12.5"', '12.5', '12.50'],
    ['7', 7, '7.00'],
    ['"0.01"', '0.01', '0.01'],
    ['0.1 (a float that is not exact in binary)', 0.1, '0.10'],
  ])('credits %s and answers the new balance', async (_name, amount, rendered) => {
    const target = await signUpHuman(test);
    const response = await creditRequest({ user_id: target.userId, currency: 'UT', amount }).expect(200);
    expect(response.body.code).toBe(0);
    expect(response.body.data).toMatchObject({ user_id: target.userId, currency: 'UT', available: rendered, frozen: '0.00', total: rendered });
    expect(response.body.data.movement_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await balance(test, target)).toMatchObject({ available: rendered });
  });

  it.each([
    ['three fraction digits', '12.505'],
    ['three fraction digits as a number', 12.505],
    ['a negative number', -1],
    ['a negative string', '-1.00'],
    ['zero', 0],
    ['zero as a string', '0.00'],
    ['letters', 'abc'],
    ['an exponent (1e21)', 1e21],
    ['an exponent string', '1e3'],
    ['an empty string', ''],
    ['null', null],
    ['a boolean', true],
    ['an object', { value: 1 }],
    ['more than the largest amount', '10000000000000.01'],
    ['far more than the largest amount', '99999999999999999999'],
  ])('refuses an amount that is %s with 4000', async (_name, amount) => {
    const before = await balance(test, user);
    const response = await creditRequest({ user_id: user.userId, currency: 'UT', amount }).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain('body.amount');
    expect(await balance(test, user)).toEqual(before);
  });

  it.each([
    ['a missing amount', { currency: 'UT' }, 'body.amount'],
    ['a missing currency', { amount: '1.00' }, 'body.currency'],
    ['an unknown currency', { currency: 'USD', amount: '1.00' }, 'body.currency'],
    ['a lowercase currency', { currency: 'ut', amount: '1.00' }, 'body.currency'],
    ['an unknown field', { currency: 'UT', amount: '1.00', bonus: true }, 'body'],
    ['a note over 200 characters', { currency: 'UT', amount: '1.00', note: 'n'.repeat(201) }, 'body.note'],
  ])('refuses %s with 4000', async (_name, body, path) => {
    const response = await creditRequest({ user_id: user.userId, ...body }).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^${path.replace('.', '\\.')}`))]),
    );
  });

  it('refuses a user_id that is not a UUID with 4000 and an unknown user with 4040', async () => {
    expect((await creditRequest({ user_id: 'alice', currency: 'UT', amount: '1.00' }).expect(400)).body.code).toBe(4000);
    expect((await creditRequest({ user_id: randomUUID(), currency: 'UT', amount: '1.00' }).expect(404)).body.code).toBe(4040);
  });

  it('refuses a body that is not JSON with 4001', async () => {
    const response = await test.http.post('/api/v1/admin/wallet/credit').set(admin).set('Content-Type', 'application/json').send('{"amount": 1').expect(400);
    expect(response.body.code).toBe(4001);
  });

  it.each([
    ['no admin token', {}],
    ['a wrong admin token', { 'X-Admin-Token': 'wrong-token-0123456789abcdef' }],
    ['an empty admin token', { 'X-Admin-Token': '' }],
    ['a prefix of the admin token', { 'X-Admin-Token': admin['X-Admin-Token'].slice(0, -1) }],
  ])('refuses %s with 4010', async (_name, headers) => {
    const before = await balance(test, user);
    const response = await creditRequest({ user_id: user.userId, currency: 'UT', amount: '1.00' }, headers).expect(401);
    expect(response.body.code).toBe(4010);
    expect(await balance(test, user)).toEqual(before);
  });

  it("refuses a user's own credentials (bearer, API key, or both) with 4010: only the admin token counts", async () => {
    const agent = await createAgent(test);
    const before = await balance(test, user);
    for (const headers of [user.headers, agent.headers, { ...user.headers, ...agent.headers }]) {
      const response = await creditRequest({ user_id: user.userId, currency: 'UT', amount: '1.00' }, headers).expect(401);
      expect(response.body.code).toBe(4010);
    }
    expect(await balance(test, user)).toEqual(before);
  });

  it('puts a CNY credit in cash, not in ut', async () => {
    const target = await signUpHuman(test);
    const data = (await creditRequest({ user_id: target.userId, currency: 'CNY', amount: '8.80' }).expect(200)).body.data;
    expect(data).toMatchObject({ currency: 'CNY', available: '8.80', total: '8.80' });
    const overview = (await test.http.get('/api/v1/wallet').set(target.headers).expect(200)).body.data;
    expect(overview).toEqual({ ut: zero('UT'), cash: { available: '8.80', frozen: '0.00', total: '8.80', currency: 'CNY' } });
  });

  it('adds up credits without losing precision', async () => {
    const target = await signUpHuman(test);
    await creditRequest({ user_id: target.userId, currency: 'CNY', amount: '9999999999.99' }).expect(200);
    expect(await balance(test, target, 'cash')).toEqual({ available: '9999999999.99', frozen: '0.00', total: '9999999999.99', currency: 'CNY' });
    const second = (await creditRequest({ user_id: target.userId, currency: 'CNY', amount: '9999999999.99' }).expect(200)).body.data;
    expect(second.available).toBe('19999999999.98');
    const items: HistoryItem[] = (await history(target.headers).expect(200)).body.data.items;
    expect(items.map((item) => [item.type, item.amount, item.balance_after])).toEqual([
      ['deposit', '9999999999.99', '19999999999.98'],
      ['deposit', '9999999999.99', '9999999999.99'],
    ]);
    // 0.1 + 0.2 is 0.30000000000000004 in floating point; the ledger says 0.30.
    const small = await signUpHuman(test);
    await creditRequest({ user_id: small.userId, currency: 'CNY', amount: 0.1 }).expect(200);
    expect((await creditRequest({ user_id: small.userId, currency: 'CNY', amount: 0.2 }).expect(200)).body.data.available).toBe('0.30');
  });

  it('accepts the largest amount, 10000000000000.00', async () => {
    const target = await signUpHuman(test);
    expect((await creditRequest({ user_id: target.userId, currency: 'UT', amount: '10000000000000.00' }).expect(200)).body.data.available).toBe(
      '10000000000000.00',
    );
  });

  it('records the credit as a deposit entry with the note as its description', async () => {
    const target = await signUpHuman(test);
    await creditRequest({ user_id: target.userId, currency: 'CNY', amount: '2.00', note: 'welcome bonus' }).expect(200);
    const items: HistoryItem[] = (await history(target.headers).expect(200)).body.data.items;
    expect(items).toEqual([
      expect.objectContaining({ type: 'deposit', amount: '2.00', balance_after: '2.00', description: 'welcome bonus', currency: 'CNY', bucket: 'available' }),
    ]);
  });

  it('replays a credit sent twice with the same Idempotency-Key instead of paying twice', async () => {
    const target = await signUpHuman(test);
    const key = randomUUID();
    const first = await creditRequest({ user_id: target.userId, currency: 'UT', amount: '5.00' }, { ...admin, 'Idempotency-Key': key }).expect(200);
    const second = await creditRequest({ user_id: target.userId, currency: 'UT', amount: '5.00' }, { ...admin, 'Idempotency-Key': key }).expect(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data).toEqual(first.body.data);
    expect(await balance(test, target)).toMatchObject({ available: '5.00' });
    const reused = await creditRequest({ user_id: target.userId, currency: 'UT', amount: '6.00' }, { ...admin, 'Idempotency-Key': key }).expect(422);
    expect(reused.body.code).toBe(4220);
  });
});

describe('POST /api/v1/admin/wallet/credit: the user id as written', () => {
  it('credits the same wallet when the user id is written in uppercase', async () => {
    const target = await signUpHuman(test);
    const response = await creditRequest({ user_id: target.userId.toUpperCase(), currency: 'UT', amount: '3.00' });
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(await balance(test, target)).toMatchObject({ available: '3.00', total: '3.00' });
  });
});

describe('history of the other space', () => {
  it('is invisible: an agent sees UT entries only, a human CNY entries only', async () => {
    const human = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, human.userId);
    const asAgent = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': human.userId };
    await test.http
      .post('/api/v1/admin/wallet/credit')
      .set(admin)
      .send({ user_id: human.userId, currency: 'CNY', amount: '7.00', note: 'human money' })
      .expect(200);
    await test.http.post('/api/v1/admin/wallet/credit').set(admin).send({ user_id: human.userId, currency: 'UT', amount: '3.00' }).expect(200);
    const agentView = (await test.http.get('/api/v1/wallet/transactions').set(asAgent).expect(200)).body.data;
    expect(agentView.items.map((item: { currency: string }) => item.currency)).toEqual(['UT']);
    const agentAskingForCash = (await test.http.get('/api/v1/wallet/transactions?currency=CNY').set(asAgent).expect(200)).body.data;
    expect(agentAskingForCash).toMatchObject({ items: [], total: 0 });
    const humanView = (await test.http.get('/api/v1/wallet/transactions').set(human.headers).expect(200)).body.data;
    expect(humanView.items.map((item: { currency: string }) => item.currency)).toEqual(['CNY']);
  });
});
