import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';
import { agentMarket, buy, createCapability } from '../helpers/market.ts';

/**
 * The lists paged by engine/common/paging.ts newestFirstPage, over HTTP: transactions, demands
 * and capabilities (each list's own tests cover its filters and a walk across inserts). What is
 * checked here is what the shared helper alone decides: rows created at the same instant are
 * ordered by id and a cursor walk through them neither skips nor repeats one, the last page has
 * no next cursor, and a cursor this service did not issue is the 4000 envelope on every list.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Page = { items: { id: string }[]; total: number; page: number; page_size: number; has_more: boolean; next_cursor: string | null };

async function listed(path: string, actor: Actor, query: Record<string, string | number>) {
  const response = await test.http.get(path).set(actor.headers).query(query);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data as Page;
}

/** Every id of a list, one page of `pageSize` after another through next_cursor. */
async function walk(path: string, actor: Actor, query: Record<string, string>, pageSize: number) {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const page: Page = await listed(path, actor, { ...query, page_size: pageSize, ...(cursor ? { cursor } : {}) });
    ids.push(...page.items.map((item) => item.id));
    expect(page.has_more).toBe(page.next_cursor !== null);
    cursor = page.next_cursor;
    if (!cursor) return ids;
  }
  throw new Error('the cursor walk did not end');
}

/** Gives the rows one created_at, so that only the id orders them. */
async function tie(table: string, ids: string[]) {
  await test.runtime.database
    .db(table)
    .whereIn('id', ids)
    .update({ created_at: new Date('2026-01-02T03:04:05.678Z') });
}

const descending = (ids: string[]) => [...ids].sort().reverse();

describe('newest-first paging of the transaction, demand and capability lists', () => {
  it('orders transactions created at one instant by id, and walks them by cursor without a skip or a repeat', async () => {
    const { buyer, capability } = await agentMarket(test);
    const ids = [];
    for (let index = 0; index < 4; index++) ids.push((await buy(test, buyer, capability.id)).id);
    await tie('transactions', ids);
    const expected = descending(ids);
    const whole = await listed('/api/v1/transactions', buyer, { page_size: 4 });
    expect(whole).toMatchObject({ total: 4, has_more: false, next_cursor: null });
    expect(whole.items.map((item) => item.id)).toEqual(expected);
    expect(await walk('/api/v1/transactions', buyer, {}, 1)).toEqual(expected);
    expect(await walk('/api/v1/transactions', buyer, {}, 3)).toEqual(expected);
  });

  it('orders demands created at one instant by id, and walks them by cursor without a skip or a repeat', async () => {
    const requester = await createAgent(test);
    const ids = [];
    for (const description of ['one need', 'two needs', 'three needs', 'four needs']) ids.push((await createDemand(test, requester, { description })).id);
    await tie('demands', ids);
    const expected = descending(ids);
    const last = await listed('/api/v1/demands', requester, { page: 2, page_size: 2 });
    expect(last).toMatchObject({ total: 4, page: 2, has_more: false, next_cursor: null });
    expect(last.items.map((item) => item.id)).toEqual(expected.slice(2));
    expect(await walk('/api/v1/demands', requester, {}, 1)).toEqual(expected);
    expect(await walk('/api/v1/demands', requester, {}, 3)).toEqual(expected);
  });

  it('orders capabilities created at one instant by id, and walks them by cursor without a skip or a repeat', async () => {
    const seller = await createAgent(test);
    const word = `w${randomBytes(6).toString('hex')}`;
    const ids = [];
    for (let index = 1; index <= 4; index++) ids.push((await createCapability(test, seller, { title: `${word} ${index}` })).id);
    await tie('capabilities', ids);
    const expected = descending(ids);
    const whole = await listed('/api/v1/capabilities', seller, { q: word, page_size: 5 });
    expect(whole).toMatchObject({ total: 4, has_more: false, next_cursor: null });
    expect(whole.items.map((item) => item.id)).toEqual(expected);
    expect(await walk('/api/v1/capabilities', seller, { q: word }, 1)).toEqual(expected);
    expect(await walk('/api/v1/capabilities', seller, { q: word }, 3)).toEqual(expected);
  });

  it.each(['/api/v1/transactions', '/api/v1/demands', '/api/v1/capabilities', '/api/v1/auth/agent-transactions'])(
    'refuses a cursor it did not issue on %s with the 4000 envelope naming query.cursor',
    async (path) => {
      const caller = path.includes('/auth/') ? await signUpHuman(test) : await createAgent(test);
      // The right shape but a number where the id belongs: decoded, then refused by its part check.
      const forged = Buffer.from(JSON.stringify(['2026-01-02T03:04:05.678Z', '42'])).toString('base64url');
      for (const cursor of ['not-a-cursor', forged]) {
        const response = await test.http.get(path).set(caller.headers).query({ cursor });
        expect(response.status).toBe(400);
        expect(response.body).toMatchObject({
          code: 4000,
          message: 'validation_error',
          data: { errors: [{ path: 'query.cursor', message: 'not a cursor this service issued' }] },
        });
      }
    },
  );
});
