import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, buy, createCapability, credit } from '../helpers/market.ts';

let test: TestApp;
let agent: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  agent = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

type Item = { id: string; title: string; agent_id: string; price_ut: string; available: boolean; total_sold: number };
/** A word no other test uses, so that `q` scopes a list to one test's capabilities. */
const uniqueWord = () => `w${randomBytes(6).toString('hex')}`;
const list = (actor: Actor, query: Record<string, string | number> = {}) => test.http.get('/api/v1/capabilities').set(actor.headers).query(query);
const listed = async (actor: Actor, query: Record<string, string | number>) => {
  const response = await list(actor, query).expect(200);
  return response.body.data as { items: Item[]; total: number; page: number; page_size: number; has_more: boolean; next_cursor: string | null };
};
const titles = async (actor: Actor, query: Record<string, string | number>) => (await listed(actor, query)).items.map((item) => item.title);
const withdraw = (owner: Actor, id: string) => test.http.put(`/api/v1/capabilities/${id}`).set(owner.headers).send({ available: false }).expect(200);

/** Registers capabilities titled `${word} 1`, `${word} 2`, ... one after another (newest last). */
async function register(owner: Actor, word: string, count: number, extra: Record<string, unknown> = {}) {
  const ids: string[] = [];
  for (let index = 1; index <= count; index++) ids.push((await createCapability(test, owner, { title: `${word} ${index}`, ...extra })).id);
  return ids;
}

describe('GET /api/v1/capabilities: pages', () => {
  it('lists newest first in the paged shape, with page/page_size', async () => {
    const seller = await createAgent(test);
    const word = uniqueWord();
    await register(seller, word, 5);
    const first = await listed(agent, { q: word, page_size: 2 });
    expect(first).toMatchObject({ total: 5, page: 1, page_size: 2, has_more: true });
    expect(first.items.map((item) => item.title)).toEqual([`${word} 5`, `${word} 4`]);
    expect(first.next_cursor).toEqual(expect.any(String));
    expect(await titles(agent, { q: word, page: 2, page_size: 2 })).toEqual([`${word} 3`, `${word} 2`]);
    const last = await listed(agent, { q: word, page: 3, page_size: 2 });
    expect(last).toMatchObject({ has_more: false, next_cursor: null, total: 5 });
    expect(last.items.map((item) => item.title)).toEqual([`${word} 1`]);
    expect((await listed(agent, { q: word, page: 4, page_size: 2 })).items).toEqual([]);
  });

  it('defaults to page 1 of 20 and answers the capability shape without the callback secret', async () => {
    const word = uniqueWord();
    const [id] = await register(agent, word, 1);
    const page = await listed(agent, { q: word });
    expect(page).toMatchObject({ page: 1, page_size: 20, total: 1 });
    expect(page.items[0]).toEqual((await test.http.get(`/api/v1/capabilities/${id}`).set(agent.headers).expect(200)).body.data);
    expect(page.items[0]).not.toHaveProperty('callback_secret');
  });

  it('walks every capability once with the cursor although new ones arrive meanwhile', async () => {
    const seller = await createAgent(test);
    const word = uniqueWord();
    await register(seller, word, 5);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await listed(agent, { q: word, page_size: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((item) => item.title));
      cursor = page.next_cursor;
      // A newer capability would shift every later offset page by one: the cursor is not moved.
      await createCapability(test, seller, { title: `${word} late` });
    } while (cursor);
    expect(seen).toEqual([`${word} 5`, `${word} 4`, `${word} 3`, `${word} 2`, `${word} 1`]);
  });

  it('counts settled sales in total_sold of each item', async () => {
    const seller = await createAgent(test);
    const buyer = await createAgent(test);
    await credit(test, buyer.userId, '50.00');
    const word = uniqueWord();
    const [sold] = await register(seller, word, 2);
    const tx = await buy(test, buyer, sold!);
    for (const [actor, action, body] of [
      [buyer, 'freeze'],
      [seller, 'accept'],
      [seller, 'deliver', { result_payload: {} }],
      [buyer, 'confirm'],
    ] as const) {
      await act(test, actor, tx.id, action, body).expect(200);
    }
    const items = (await listed(agent, { q: word })).items;
    expect(items.map((item) => [item.title, item.total_sold])).toEqual([
      [`${word} 2`, 0],
      [`${word} 1`, 1],
    ]);
  });
});

describe('GET /api/v1/capabilities: filters', () => {
  it('filters by category, capability_type and pricing_model', async () => {
    const word = uniqueWord();
    await createCapability(test, agent, { title: `${word} a`, category: 'translation', capability_type: 'api', pricing_model: 'per_hour' });
    await createCapability(test, agent, { title: `${word} b`, category: 'data', capability_type: 'api', pricing_model: 'per_use' });
    await createCapability(test, agent, { title: `${word} c`, category: 'data', capability_type: 'tool', pricing_model: 'per_use' });
    expect(await titles(agent, { q: word, category: 'data' })).toEqual([`${word} c`, `${word} b`]);
    expect(await titles(agent, { q: word, capability_type: 'api' })).toEqual([`${word} b`, `${word} a`]);
    expect(await titles(agent, { q: word, pricing_model: 'per_hour' })).toEqual([`${word} a`]);
    expect(await titles(agent, { q: word, category: 'data', capability_type: 'api', pricing_model: 'per_use' })).toEqual([`${word} b`]);
  });

  it('filters by a price range, inclusive at both ends, amounts as strings', async () => {
    const word = uniqueWord();
    for (const price of ['1.00', '5.50', '10.00', '20.00']) await createCapability(test, agent, { title: `${word} ${price}`, price_ut: price });
    expect(await titles(agent, { q: word, min_price_ut: '5.50', max_price_ut: '10' })).toEqual([`${word} 10.00`, `${word} 5.50`]);
    expect(await titles(agent, { q: word, min_price_ut: '10.01' })).toEqual([`${word} 20.00`]);
    expect(await titles(agent, { q: word, max_price_ut: '0.99' })).toEqual([]);
  });

  it('filters by owner: me, or a user id', async () => {
    const other = await createAgent(test);
    const word = uniqueWord();
    await createCapability(test, agent, { title: `${word} mine` });
    await createCapability(test, other, { title: `${word} theirs` });
    expect(await titles(agent, { q: word, owner: 'me' })).toEqual([`${word} mine`]);
    expect(await titles(agent, { q: word, owner: other.userId })).toEqual([`${word} theirs`]);
    expect(await titles(other, { q: word, owner: 'me' })).toEqual([`${word} theirs`]);
    expect(await titles(agent, { q: word, owner: other.userId.toUpperCase() })).toEqual([`${word} theirs`]);
    // An owner with no capabilities is an empty list, not an error.
    expect(await titles(agent, { owner: randomUUID() })).toEqual([]);
  });

  it('matches every word of q in the title, description or a tag, ignoring case', async () => {
    const word = uniqueWord();
    await createCapability(test, agent, { title: `${word} Invoice Parser`, description: 'Reads PDF invoices' });
    await createCapability(test, agent, { title: `${word} other`, description: 'Turns audio into text', tags: ['Speech', '语音识别'] });
    expect(await titles(agent, { q: `${word.toUpperCase()} invoice` })).toEqual([`${word} Invoice Parser`]);
    expect(await titles(agent, { q: `${word} pdf` })).toEqual([`${word} Invoice Parser`]);
    expect(await titles(agent, { q: `${word} SPEECH` })).toEqual([`${word} other`]);
    expect(await titles(agent, { q: `${word} 语音` })).toEqual([`${word} other`]);
    expect(await titles(agent, { q: `${word} invoice speech` })).toEqual([]);
  });

  it('takes %, _ and \\ in q literally', async () => {
    const word = uniqueWord();
    await createCapability(test, agent, { title: `${word} 100% done`, description: 'a_b' });
    await createCapability(test, agent, { title: `${word} 1000 done`, description: 'ab\\c' });
    expect(await titles(agent, { q: `${word} 100%` })).toEqual([`${word} 100% done`]);
    expect(await titles(agent, { q: `${word} a_b` })).toEqual([`${word} 100% done`]);
    expect(await titles(agent, { q: `${word} %` })).toEqual([`${word} 100% done`]);
    expect(await titles(agent, { q: `${word} b\\c` })).toEqual([`${word} 1000 done`]);
  });

  it('lists withdrawn capabilities only to their owner, with available=false or any; deleted ones never', async () => {
    const owner = await createAgent(test);
    const word = uniqueWord();
    const [offered, withdrawn, deleted] = await register(owner, word, 3);
    await withdraw(owner, withdrawn!);
    await test.http.delete(`/api/v1/capabilities/${deleted}`).set(owner.headers).expect(200);
    expect(offered).toBeDefined();
    expect(await titles(owner, { q: word })).toEqual([`${word} 1`]);
    expect(await titles(owner, { q: word, available: 'true' })).toEqual([`${word} 1`]);
    expect(await titles(owner, { q: word, available: 'false' })).toEqual([`${word} 2`]);
    expect(await titles(owner, { q: word, available: 'any' })).toEqual([`${word} 2`, `${word} 1`]);
    expect(await titles(agent, { q: word, available: 'false' })).toEqual([]);
    expect(await titles(agent, { q: word, available: 'any', owner: owner.userId })).toEqual([`${word} 1`]);
  });
});

describe('GET /api/v1/capabilities: spaces', () => {
  it('shows each space only its own capabilities, whatever the filters', async () => {
    const word = uniqueWord();
    await createCapability(test, agent, { title: `${word} agent` });
    await createCapability(test, human, { title: `${word} human` });
    expect(await titles(agent, { q: word })).toEqual([`${word} agent`]);
    expect(await titles(human, { q: word })).toEqual([`${word} human`]);
    expect(await titles(agent, { q: word, owner: human.userId })).toEqual([]);
    expect(await titles(human, { q: word, owner: agent.userId, available: 'any' })).toEqual([]);
    expect((await listed(human, { q: word })).total).toBe(1);
  });
});

describe('GET /api/v1/capabilities: validation', () => {
  it.each([
    ['page 0', { page: 0 }, 'query.page'],
    ['page_size 0', { page_size: 0 }, 'query.page_size'],
    ['page_size 101', { page_size: 101 }, 'query.page_size'],
    ['a fractional page_size', { page_size: '2.5' }, 'query.page_size'],
    ['an unknown category', { category: 'astrology' }, 'query.category'],
    ['an unknown capability_type', { capability_type: 'magic' }, 'query.capability_type'],
    ['an unknown pricing_model', { pricing_model: 'per_minute' }, 'query.pricing_model'],
    ['a price with 3 decimals', { min_price_ut: '1.005' }, 'query.min_price_ut'],
    ['a negative price', { max_price_ut: '-1' }, 'query.max_price_ut'],
    ['min_price_ut above max_price_ut', { min_price_ut: '10', max_price_ut: '9.99' }, 'query.max_price_ut'],
    ['an owner that is neither me nor a uuid', { owner: 'someone' }, 'query.owner'],
    ['available=maybe', { available: 'maybe' }, 'query.available'],
    ['a q over 200 characters', { q: 'x'.repeat(201) }, 'query.q'],
    ['a q of 11 words', { q: Array.from({ length: 11 }, (_, index) => `w${index}`).join(' ') }, 'query.q'],
    ['an empty q', { q: '  ' }, 'query.q'],
    ['a forged cursor', { cursor: Buffer.from('["x","y"]').toString('base64url') }, 'query.cursor'],
  ])('refuses %s with 4000 and the offending path', async (_name, query, path) => {
    const response = await list(agent, query).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('refuses a filter given twice with 4000', async () => {
    const response = await test.http.get('/api/v1/capabilities?category=data&category=design').set(agent.headers).expect(400);
    expect(response.body.data.errors[0].path).toBe('query.category');
  });

  it('accepts the boundaries: page_size 1 and 100, a q of 200 characters and 10 words', async () => {
    expect((await listed(agent, { page_size: 1 })).items.length).toBeLessThanOrEqual(1);
    expect((await listed(agent, { page_size: 100 })).page_size).toBe(100);
    expect((await listed(agent, { q: 'x'.repeat(200) })).items).toEqual([]);
    expect((await listed(agent, { q: Array.from({ length: 10 }, (_, index) => `w${index}`).join(' ') })).items).toEqual([]);
  });
});

describe('GET /api/v1/capabilities: who may call', () => {
  it('refuses no credentials and a bad bearer token with 4010, mixed credentials with 4011', async () => {
    expect((await test.http.get('/api/v1/capabilities').expect(401)).body.code).toBe(4010);
    expect((await test.http.get('/api/v1/capabilities').set({ Authorization: 'Bearer not.a.token' }).expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .get('/api/v1/capabilities')
          .set({ ...agent.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
  });
});

describe('engine.capabilities.categoryCounts', () => {
  it("counts the offered capabilities per category in the caller's space, every code present", async () => {
    const principal = { user_id: agent.userId, caller_type: 'agent' as const, platform: null, api_key_id: null };
    const before = await test.runtime.engine.capabilities.categoryCounts(principal);
    expect(Object.keys(before)).toHaveLength(22);
    const owner = await createAgent(test);
    const [kept, , withdrawn, deleted] = await register(owner, uniqueWord(), 4, { category: 'repair' });
    await createCapability(test, owner, { category: 'health' });
    await createCapability(test, human, { category: 'repair' });
    await withdraw(owner, withdrawn!);
    await test.http.delete(`/api/v1/capabilities/${deleted}`).set(owner.headers).expect(200);
    expect(kept).toBeDefined();
    const after = await test.runtime.engine.capabilities.categoryCounts(principal);
    expect(after.repair! - before.repair!).toBe(2);
    expect(after.health! - before.health!).toBe(1);
    expect(after.design).toBe(before.design);
    const humanCounts = await test.runtime.engine.capabilities.categoryCounts({ ...principal, user_id: human.userId, caller_type: 'human' });
    expect(humanCounts.repair).toBeGreaterThanOrEqual(1);
    expect(humanCounts.health).toBe(0);
  });
});
