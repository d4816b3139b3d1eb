import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';

let test: TestApp;
let owner: Actor;
let other: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  owner = await createAgent(test);
  other = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const valid = { name: 'Logo design', description: 'Three logo concepts for a small shop, vector files, two revisions.', category: 'design' };
const create = (actor: Actor, body: Record<string, unknown>, path = '/api/v1/skills/') => test.http.post(path).set(actor.headers).send(body);
const created = async (actor: Actor, body: Record<string, unknown> = {}) => (await create(actor, { ...valid, ...body }).expect(201)).body.data as Skill;
const skillCount = async () => Number(((await test.runtime.engine.dependencies.db('skills').count('* as count')) as { count: string }[])[0]!.count);

type Skill = Record<string, unknown> & { id: string; status: string; name: string };

describe('POST /api/v1/skills/', () => {
  it('creates a skill with the defaults, the owner, space and source from the server', async () => {
    const skill = await created(owner, { ut_price: '12.50', tags: ['logo', 'vector'] });
    expect(skill).toMatchObject({
      user_id: owner.userId,
      owner_type: 'agent',
      name: 'Logo design',
      mode: 'online',
      city: null,
      category: 'design',
      tags: ['logo', 'vector'],
      images: [],
      status: 'active',
      ut_price: '12.50',
      currency: 'UT',
      pricing_model: 'fixed',
      source: 'manual',
      min_duration: null,
      max_duration: null,
      quality_score: 3,
      rating_count: 0,
      rating_average: null,
      deleted_at: null,
    });
  });

  it("is the same at /api/v1/skills without the slash, and a human's skill is in the human space and currency", async () => {
    const skill = await created(human, { ut_price: 8 });
    expect(skill).toMatchObject({ owner_type: 'human', currency: 'CNY', ut_price: '8.00', user_id: human.userId });
    const bare = (await create(human, valid, '/api/v1/skills').expect(201)).body.data as Skill;
    expect(bare.owner_type).toBe('human');
  });

  it('takes every optional field within its bounds', async () => {
    const skill = await created(owner, {
      mode: 'offline',
      city: 'Hangzhou',
      images: ['https://example.com/a.png', 'https://example.com/b.png', 'https://example.com/c.png'],
      pricing_model: 'per_hour',
      ut_price: 0,
      min_duration: 1,
      max_duration: 1,
      name: 'n'.repeat(100),
      description: 'd'.repeat(5000),
      tags: Array.from({ length: 10 }, (_, index) => `${'t'.repeat(29)}${index}`),
    });
    expect(skill).toMatchObject({ mode: 'offline', city: 'Hangzhou', pricing_model: 'per_hour', ut_price: '0.00', min_duration: 1, max_duration: 1 });
    expect(skill.images).toHaveLength(3);
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ['no name', { name: undefined }, 'body.name'],
    ['no description', { description: undefined }, 'body.description'],
    ['no category', { category: undefined }, 'body.category'],
    ['an unknown category', { category: 'cooking' }, 'body.category'],
    ['a blank name', { name: '   ' }, 'body.name'],
    ['a name over 100 characters', { name: 'n'.repeat(101) }, 'body.name'],
    ['a description over 5000 characters', { description: 'd'.repeat(5001) }, 'body.description'],
    ['offline without a city', { mode: 'offline' }, 'body.city'],
    ['an unknown mode', { mode: 'hybrid' }, 'body.mode'],
    ['a city over 100 characters', { mode: 'offline', city: 'c'.repeat(101) }, 'body.city'],
    ['four images', { images: ['https://a.example/1', 'https://a.example/2', 'https://a.example/3', 'https://a.example/4'] }, 'body.images'],
    ['an http image', { images: ['http://example.com/a.png'] }, 'body.images.0'],
    ['an image that is no URL', { images: ['not a url'] }, 'body.images.0'],
    ['a negative price', { ut_price: '-1' }, 'body.ut_price'],
    ['a price with three decimals', { ut_price: '1.005' }, 'body.ut_price'],
    ['a price over the maximum', { ut_price: '10000000000000000' }, 'body.ut_price'],
    ['an unknown pricing model', { pricing_model: 'per_minute' }, 'body.pricing_model'],
    ['min_duration above max_duration', { min_duration: 5, max_duration: 4 }, 'body.max_duration'],
    ['a zero duration', { min_duration: 0 }, 'body.min_duration'],
    ['a fractional duration', { max_duration: 1.5 }, 'body.max_duration'],
    ['eleven tags', { tags: Array.from({ length: 11 }, (_, index) => `tag${index}`) }, 'body.tags'],
    ['a tag over 30 characters', { tags: ['t'.repeat(31)] }, 'body.tags.0'],
    ['user_id from the caller', { user_id: randomUUID() }, 'body'],
    ['owner_type from the caller', { owner_type: 'human' }, 'body'],
    ['source from the caller', { source: 'ai_created' }, 'body'],
  ];
  it.each(refusals)('refuses %s with 4000 naming the field, and stores nothing', async (_name, change, path) => {
    const before = await skillCount();
    const response = await create(owner, { ...valid, ...change }).expect(400);
    expect(response.body.code).toBe(4000);
    expect((response.body.data.errors as { path: string }[]).map((error) => error.path)).toContain(path);
    expect(await skillCount()).toBe(before);
  });

  it('refuses a body that is not JSON, and callers without or with mixed credentials', async () => {
    expect((await test.http.post('/api/v1/skills/').set(owner.headers).set('Content-Type', 'application/json').send('{"name":').expect(400)).body.code).toBe(
      4001,
    );
    expect((await test.http.post('/api/v1/skills/').send(valid).expect(401)).body.code).toBe(4010);
    const mixed = await test.http
      .post('/api/v1/skills/')
      .set({ ...owner.headers, Authorization: `Bearer ${human.token}` })
      .send(valid)
      .expect(400);
    expect(mixed.body.code).toBe(4011);
  });

  it('creates once for one Idempotency-Key, and refuses the key with another body', async () => {
    const key = `skill-${randomUUID()}`;
    const first = await test.http.post('/api/v1/skills/').set(owner.headers).set('Idempotency-Key', key).send(valid).expect(201);
    const again = await test.http.post('/api/v1/skills/').set(owner.headers).set('Idempotency-Key', key).send(valid).expect(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    const changed = await test.http
      .post('/api/v1/skills/')
      .set(owner.headers)
      .set('Idempotency-Key', key)
      .send({ ...valid, name: 'Other' })
      .expect(422);
    expect(changed.body.code).toBe(4220);
  });
});

describe('GET /api/v1/skills/ (mine)', () => {
  it("lists only the caller's own skills of the caller's space, newest first, with status filter, pages and cursor", async () => {
    const mine = await createAgent(test);
    const ids = [];
    for (let index = 0; index < 5; index++) ids.push((await created(mine, { name: `Mine ${index}` })).id);
    await created(other, { name: 'Not mine' });
    await test.http.put(`/api/v1/skills/${ids[1]}`).set(mine.headers).send({ status: 'inactive' }).expect(200);
    const all = (await test.http.get('/api/v1/skills/').set(mine.headers).expect(200)).body.data;
    expect(all.items.map((item: Skill) => item.name)).toEqual(['Mine 4', 'Mine 3', 'Mine 2', 'Mine 1', 'Mine 0']);
    expect(all).toMatchObject({ total: 5, page: 1, has_more: false, next_cursor: null });
    const inactive = (await test.http.get('/api/v1/skills').set(mine.headers).query({ status: 'inactive' }).expect(200)).body.data;
    expect(inactive.items.map((item: Skill) => item.id)).toEqual([ids[1]]);
    const first = (await test.http.get('/api/v1/skills/').set(mine.headers).query({ page_size: 2 }).expect(200)).body.data;
    expect(first).toMatchObject({ total: 5, has_more: true });
    const second = (await test.http.get('/api/v1/skills/').set(mine.headers).query({ page_size: 2, cursor: first.next_cursor }).expect(200)).body.data;
    expect(second.items.map((item: Skill) => item.name)).toEqual(['Mine 2', 'Mine 1']);
    const paged = (await test.http.get('/api/v1/skills/').set(mine.headers).query({ page_size: 2, page: 3 }).expect(200)).body.data;
    expect(paged.items.map((item: Skill) => item.name)).toEqual(['Mine 0']);
  });

  it("shows the owner's human space apart from the agent space of the same user id", async () => {
    const agent = await createAgent(test);
    await created(agent, { name: 'Agent skill' });
    const list = (await test.http.get('/api/v1/skills/').set(human.headers).expect(200)).body.data;
    expect(list.items.every((item: Skill) => item.owner_type === 'human' && item.user_id === human.userId)).toBe(true);
  });

  it('refuses bad paging and filters with 4000', async () => {
    for (const query of [{ status: 'deleted' }, { page: 0 }, { page_size: 101 }, { page_size: 'x' }, { cursor: 'not-a-cursor' }]) {
      const response = await test.http.get('/api/v1/skills/').set(owner.headers).query(query).expect(400);
      expect(response.body.code).toBe(4000);
    }
  });
});

describe('GET, PUT and DELETE /api/v1/skills/{skill_id}', () => {
  it('shows a skill to anyone of its space, and hides it from the other space (4040)', async () => {
    const skill = await created(owner);
    expect((await test.http.get(`/api/v1/skills/${skill.id}`).set(other.headers).expect(200)).body.data.id).toBe(skill.id);
    expect((await test.http.get(`/api/v1/skills/${skill.id}`).set(human.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get(`/api/v1/skills/${randomUUID()}`).set(owner.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get('/api/v1/skills/not-a-uuid').set(owner.headers).expect(400)).body.code).toBe(4000);
    expect((await test.http.get(`/api/v1/skills/${skill.id}`).expect(401)).body.code).toBe(4010);
  });

  it('changes only the fields sent, by the owner only', async () => {
    const skill = await created(owner, { ut_price: '5.00', tags: ['a'] });
    const changed = (await test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({ name: 'Brand identity', ut_price: null }).expect(200)).body
      .data;
    expect(changed).toMatchObject({ name: 'Brand identity', ut_price: null, tags: ['a'], description: valid.description, category: 'design' });
    expect((await test.http.put(`/api/v1/skills/${skill.id}`).set(other.headers).send({ name: 'Stolen' }).expect(403)).body.code).toBe(4030);
    expect((await test.http.put(`/api/v1/skills/${skill.id}`).set(human.headers).send({ name: 'Stolen' }).expect(404)).body.code).toBe(4040);
    expect((await test.http.get(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(200)).body.data.name).toBe('Brand identity');
  });

  it('checks the rules across fields on what the update leaves', async () => {
    const online = await created(owner);
    const noCity = await test.http.put(`/api/v1/skills/${online.id}`).set(owner.headers).send({ mode: 'offline' }).expect(400);
    expect(noCity.body.data.errors[0].path).toBe('body.city');
    const offline = await created(owner, { mode: 'offline', city: 'Paris', min_duration: 2 });
    expect((await test.http.put(`/api/v1/skills/${offline.id}`).set(owner.headers).send({ city: null }).expect(400)).body.code).toBe(4000);
    expect((await test.http.put(`/api/v1/skills/${offline.id}`).set(owner.headers).send({ max_duration: 1 }).expect(400)).body.data.errors[0].path).toBe(
      'body.max_duration',
    );
    const moved = (await test.http.put(`/api/v1/skills/${offline.id}`).set(owner.headers).send({ mode: 'online', city: null }).expect(200)).body.data;
    expect(moved).toMatchObject({ mode: 'online', city: null });
    for (const body of [{}, { status: 'deleted' }, { images: ['http://x.example/a'] }, { user_id: randomUUID() }]) {
      expect((await test.http.put(`/api/v1/skills/${online.id}`).set(owner.headers).send(body).expect(400)).body.code).toBe(4000);
    }
  });

  it('moves the status active <-> inactive, and naming the present status changes nothing', async () => {
    const skill = await created(owner);
    const put = (status: string) => test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({ status });
    expect((await put('inactive').expect(200)).body.data.status).toBe('inactive');
    expect((await put('inactive').expect(200)).body.data.status).toBe('inactive');
    expect((await put('active').expect(200)).body.data.status).toBe('active');
  });

  it('deletes softly: gone from lists and changes, still readable with deleted_at; a second delete is 4040', async () => {
    const skill = await created(owner, { name: 'To delete' });
    expect((await test.http.delete(`/api/v1/skills/${skill.id}`).set(other.headers).expect(403)).body.code).toBe(4030);
    expect((await test.http.delete(`/api/v1/skills/${skill.id}`).set(human.headers).expect(404)).body.code).toBe(4040);
    const deleted = (await test.http.delete(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(200)).body.data;
    expect(deleted).toMatchObject({ id: skill.id, deleted: true });
    expect((await test.http.delete(`/api/v1/skills/${skill.id}`).set(owner.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({ name: 'Back' }).expect(404)).body.code).toBe(4040);
    const read = (await test.http.get(`/api/v1/skills/${skill.id}`).set(other.headers).expect(200)).body.data;
    expect(read.deleted_at).toBe(deleted.deleted_at);
    const mine = (await test.http.get('/api/v1/skills/').set(owner.headers).query({ page_size: 100 }).expect(200)).body.data;
    expect(mine.items.map((item: Skill) => item.id)).not.toContain(skill.id);
  });
});
