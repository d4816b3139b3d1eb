import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { fillerSkills, rankingQueries, targetSkills } from '../fixtures/skill-hall-fixture.ts';

let test: TestApp;
let sellers: Actor[];
let buyer: Actor;
let human: Actor;

type HallItem = {
  id: string;
  name: string;
  owner_type: string;
  ut_price: string | null;
  quality_score: number;
  created_at: string;
  city: string | null;
  score?: number;
};
type HallPage = { items: HallItem[]; total: number; page: number; page_size: number; has_more: boolean; next_cursor: string | null; sort: string };

beforeAll(async () => {
  test = await startTestApp();
  // Five sellers: the 200 skills stay under the cap of skills one account keeps (limits.skillsPerUserMax).
  sellers = [await createAgent(test), await createAgent(test), await createAgent(test), await createAgent(test), await createAgent(test)];
  buyer = await createAgent(test);
  human = await signUpHuman(test);
  const all = [...targetSkills, ...fillerSkills()];
  expect(all).toHaveLength(200);
  for (const [index, skill] of all.entries()) {
    await test.http
      .post('/api/v1/skills/')
      .set(sellers[index % sellers.length]!.headers)
      .send(skill)
      .expect(201);
  }
}, 120_000);
afterAll(() => test.close());

const hall = async (actor: Actor, query: Record<string, unknown>) =>
  (await test.http.get('/api/v1/skills/hall').set(actor.headers).query(query).expect(200)).body.data as HallPage;
const create = async (actor: Actor, body: Record<string, unknown>) =>
  (
    await test.http
      .post('/api/v1/skills/')
      .set(actor.headers)
      .send({ description: 'A test skill', category: 'other', ...body })
      .expect(201)
  ).body.data as HallItem;

describe('the hall ranks a text query by the matcher', () => {
  it('puts the skill a query describes in the top three for most of forty queries (English, Chinese, across words)', async () => {
    const misses: string[] = [];
    for (const [q, expected] of rankingQueries) {
      const page = await hall(buyer, { q, page_size: 3 });
      if (!page.items.some((item) => item.name === expected)) misses.push(`${q} -> ${page.items.map((item) => item.name).join(' | ')}`);
    }
    expect(misses.length, misses.join('\n')).toBeLessThanOrEqual(Math.floor(rankingQueries.length * 0.1));
  });

  it('orders by score, pages through the ranking with the cursor, and finds nothing for words no skill has', async () => {
    const first = await hall(buyer, { q: 'translation', page_size: 5 });
    expect(first.sort).toBe('relevance');
    expect(first.items.map((item) => item.score!)).toEqual([...first.items.map((item) => item.score!)].sort((left, right) => right - left));
    const seen = new Set(first.items.map((item) => item.id));
    let cursor = first.next_cursor;
    while (cursor) {
      const next = await hall(buyer, { q: 'translation', page_size: 5, cursor });
      for (const item of next.items) seen.add(item.id);
      cursor = next.next_cursor;
    }
    expect(seen.size).toBe(first.total);
    expect(first.total).toBeGreaterThan(5);
    expect((await hall(buyer, { q: 'xylophonequartz' })).items).toEqual([]);
    expect((await hall(buyer, { q: '!!!' })).total).toBe(0);
  });
});

describe("the hall shows the active skills of the caller's space", () => {
  it('never shows a human skill to an agent nor an agent skill to a human', async () => {
    const word = `w${randomBytes(5).toString('hex')}`;
    const ofHuman = await create(human, { name: `${word} by a human` });
    const ofAgent = await create(sellers[0]!, { name: `${word} by an agent` });
    expect((await hall(buyer, { q: word })).items.map((item) => item.id)).toEqual([ofAgent.id]);
    expect((await hall(human, { q: word })).items.map((item) => item.id)).toEqual([ofHuman.id]);
    const agentsHall = await hall(buyer, { page_size: 100 });
    expect(agentsHall.items.every((item) => item.owner_type === 'agent')).toBe(true);
    expect((await hall(human, { page_size: 100 })).items.every((item) => item.owner_type === 'human')).toBe(true);
  });

  it('leaves out inactive and deleted skills', async () => {
    const word = `w${randomBytes(5).toString('hex')}`;
    const [kept, hidden, deleted] = [
      await create(sellers[1]!, { name: `${word} one` }),
      await create(sellers[1]!, { name: `${word} two` }),
      await create(sellers[1]!, { name: `${word} three` }),
    ];
    await test.http.put(`/api/v1/skills/${hidden.id}`).set(sellers[1]!.headers).send({ status: 'inactive' }).expect(200);
    await test.http.delete(`/api/v1/skills/${deleted.id}`).set(sellers[1]!.headers).expect(200);
    expect((await hall(buyer, { q: word })).items.map((item) => item.id)).toEqual([kept.id]);
    await test.http.put(`/api/v1/skills/${hidden.id}`).set(sellers[1]!.headers).send({ status: 'active' }).expect(200);
    expect((await hall(buyer, { q: word })).total).toBe(2);
  });
});

describe("the hall's filters and orders", () => {
  const city = `Town${randomBytes(4).toString('hex')}`;
  const prices = ['5.00', '1.00', null, '3.00', '3.00', null, '9.50'];
  let ids: string[];

  beforeAll(async () => {
    ids = [];
    for (const [index, price] of prices.entries()) {
      const skill = await create(sellers[index % 3]!, {
        name: `Errand ${index}`,
        mode: 'offline',
        city,
        category: 'life_service',
        ...(price === null ? {} : { ut_price: price }),
      });
      ids.push(skill.id);
      test.clock.advanceMs(1000);
    }
    await create(sellers[0]!, { name: 'Online errand', category: 'life_service', ut_price: '2.00' });
  });

  /** Every item of an order, read page by page through the cursor (two a page). */
  async function walk(query: Record<string, unknown>) {
    const items: HallItem[] = [];
    let cursor: string | null | undefined;
    do {
      const page = await hall(buyer, { ...query, city, page_size: 2, ...(cursor ? { cursor } : {}) });
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return items;
  }

  it('filters by city in any case, mode, category and price range', async () => {
    expect((await hall(buyer, { city: city.toUpperCase(), page_size: 100 })).total).toBe(7);
    expect((await hall(buyer, { city, mode: 'online' })).total).toBe(0);
    expect((await hall(buyer, { city, category: 'design' })).total).toBe(0);
    const ranged = await hall(buyer, { city, min_price_ut: '3.00', max_price_ut: '5.00', page_size: 100 });
    expect(ranged.items.map((item) => item.ut_price).sort()).toEqual(['3.00', '3.00', '5.00']);
  });

  it('orders newest first by default, and walks every order once through the cursor, unpriced skills last', async () => {
    expect((await walk({})).map((item) => item.id)).toEqual([...ids].reverse());
    expect((await walk({ sort: 'price_asc' })).map((item) => item.ut_price)).toEqual(['1.00', '3.00', '3.00', '5.00', '9.50', null, null]);
    expect((await walk({ sort: 'price_desc' })).map((item) => item.ut_price)).toEqual(['9.50', '5.00', '3.00', '3.00', '1.00', null, null]);
    expect(new Set((await walk({ sort: 'price_asc' })).map((item) => item.id)).size).toBe(7);
    expect((await walk({ sort: 'newest' })).map((item) => item.id)).toEqual([...ids].reverse());
  });

  it('orders by quality, best rated first', async () => {
    const [best, worst] = [ids[2]!, ids[4]!];
    const raters = [sellers[0]!, sellers[1]!, sellers[2]!, buyer];
    for (const rater of raters) {
      await test.runtime.engine.skills.recordRating({ skill_id: best, rater_user_id: rater.userId, task_id: null, score: 5, paid_amount: 100n });
      await test.runtime.engine.skills.recordRating({ skill_id: worst, rater_user_id: rater.userId, task_id: null, score: 1, paid_amount: 100n });
    }
    const ordered = await walk({ sort: 'quality' });
    expect(ordered[0]!.id).toBe(best);
    expect(ordered.at(-1)!.id).toBe(worst);
    expect(ordered.map((item) => item.quality_score)).toEqual([...ordered.map((item) => item.quality_score)].sort((left, right) => right - left));
  });

  it('refuses what it cannot answer with 4000', async () => {
    const newest = await hall(buyer, { city, page_size: 2 });
    const refused: Record<string, unknown>[] = [
      { sort: 'relevance' },
      { sort: 'cheapest' },
      { min_price_ut: '5', max_price_ut: '4' },
      { min_price_ut: '-1' },
      { mode: 'hybrid' },
      { category: 'cooking' },
      { q: 'x'.repeat(201) },
      { cursor: 'garbage' },
      { cursor: newest.next_cursor, sort: 'price_asc' },
      { page_size: 101 },
      { page: 0 },
    ];
    for (const query of refused) {
      const response = await test.http.get('/api/v1/skills/hall').set(buyer.headers).query(query).expect(400);
      expect(response.body.code, JSON.stringify(query)).toBe(4000);
    }
    expect((await test.http.get('/api/v1/skills/hall').expect(401)).body.code).toBe(4010);
  });
});
