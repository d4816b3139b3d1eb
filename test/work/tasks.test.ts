import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { admin, balance, credit } from '../helpers/market.ts';

let test: TestApp;
let other: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  other = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const valid = { title: 'Translate a contract', description: 'Ten pages of a supply contract, English into Chinese.', mode: 'online', category: 'translation' };
type Task = Record<string, unknown> & { id: string; status: string; bounty_held: string };
const post = (actor: Actor, body: Record<string, unknown>, path = '/api/v1/tasks/') => test.http.post(path).set(actor.headers).send(body);
const publish = async (actor: Actor, body: Record<string, unknown> = {}) => (await post(actor, { ...valid, ...body }).expect(201)).body.data as Task;
const funded = async (amount = '100.00', currency: 'UT' | 'CNY' = 'UT') => {
  const actor = await createAgent(test);
  await credit(test, actor.userId, amount, currency);
  return actor;
};
const expectBooks = async () => expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
const taskEntries = (taskId: string) =>
  test.runtime.engine.dependencies.db('ledger_entries').where({ biz_ref_id: taskId }).orderBy('id').select('type', 'bucket', 'amount');

describe('publishing a task holds its bounty', () => {
  it("freezes the bounty from the publisher's available balance, in one balanced movement referring to the task", async () => {
    const publisher = await funded();
    const task = await publish(publisher, { bounty_amount: '30.00', delivery_hours: 48 });
    expect(task).toMatchObject({
      status: 'open',
      owner_type: 'agent',
      user_id: publisher.userId,
      bounty_amount: '30.00',
      bounty_currency: 'UT',
      bounty_held: '30.00',
      delivery_hours: 48,
    });
    expect(task.published_at).toEqual(expect.any(String));
    expect(await balance(test, publisher)).toMatchObject({ available: '70.00', frozen: '30.00', total: '100.00' });
    expect(await taskEntries(task.id)).toEqual([
      { type: 'freeze', bucket: 'available', amount: '-3000' },
      { type: 'freeze', bucket: 'frozen', amount: '3000' },
    ]);
    await expectBooks();
  });

  it('keeps the task a draft and answers 4020 with the numbers when the balance is short; publish-draft holds it once funded', async () => {
    const publisher = await funded('10.00');
    const short = await post(publisher, { ...valid, bounty_amount: '25.00' }).expect(402);
    expect(short.body).toMatchObject({ code: 4020, data: { status: 'draft', currency: 'UT', available: '10.00', required: '25.00' } });
    const taskId = short.body.data.task_id as string;
    expect(await balance(test, publisher)).toMatchObject({ available: '10.00', frozen: '0.00' });
    expect((await test.http.get(`/api/v1/tasks/${taskId}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
      status: 'draft',
      bounty_held: '0.00',
    });
    const stillShort = await post(publisher, { delivery_hours: 24 }, `/api/v1/tasks/${taskId}/publish-draft`).expect(402);
    expect(stillShort.body.data).toMatchObject({ available: '10.00', required: '25.00', status: 'draft' });
    await credit(test, publisher.userId, '20.00');
    const opened = (await post(publisher, { delivery_hours: 24 }, `/api/v1/tasks/${taskId}/publish-draft`).expect(200)).body.data;
    expect(opened).toMatchObject({ status: 'open', bounty_held: '25.00', delivery_hours: 24 });
    expect(await balance(test, publisher)).toMatchObject({ available: '5.00', frozen: '25.00' });
    expect((await post(publisher, { delivery_hours: 24 }, `/api/v1/tasks/${taskId}/publish-draft`).expect(409)).body.code).toBe(4090);
    await expectBooks();
  });

  it('stores a draft on request without holding anything, seen by its publisher only', async () => {
    const publisher = await funded();
    const draft = await publish(publisher, { draft: true, bounty_amount: '50.00' });
    expect(draft).toMatchObject({ status: 'draft', bounty_held: '0.00', published_at: null });
    expect(await balance(test, publisher)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect((await test.http.get(`/api/v1/tasks/${draft.id}`).set(other.headers).expect(404)).body.code).toBe(4040);
    const missing = await post(publisher, {}, `/api/v1/tasks/${draft.id}/publish-draft`).expect(400);
    expect(missing.body.data.errors.map((error: { path: string }) => error.path)).toEqual(['body.delivery_hours']);
  });

  it("holds a person's bounty in CNY, and refuses a bounty currency that is not the space's", async () => {
    await credit(test, human.userId, '80.00', 'CNY');
    const task = await publish(human, { bounty_amount: '80.00', bounty_currency: 'CNY' });
    expect(task).toMatchObject({ owner_type: 'human', bounty_currency: 'CNY', bounty_held: '80.00' });
    expect(await balance(test, human, 'cash')).toMatchObject({ available: '0.00', frozen: '80.00' });
    const agent = await funded();
    expect((await post(agent, { ...valid, bounty_amount: '1.00', bounty_currency: 'CNY' }).expect(400)).body.data.errors[0].path).toBe('body.bounty_currency');
    expect((await post(human, { ...valid, bounty_currency: 'UT' }).expect(400)).body.code).toBe(4000);
    await expectBooks();
  });
});

describe('changing, closing, cancelling and expiring a task', () => {
  it("moves the hold by the difference when an open task's bounty changes, and refuses more than the balance allows", async () => {
    const publisher = await funded('50.00');
    const task = await publish(publisher, { bounty_amount: '20.00' });
    const put = (body: Record<string, unknown>) => test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send(body);
    expect((await put({ bounty_amount: '35.00' }).expect(200)).body.data.bounty_held).toBe('35.00');
    expect(await balance(test, publisher)).toMatchObject({ available: '15.00', frozen: '35.00' });
    expect((await put({ bounty_amount: '5.00', title: 'Shorter contract' }).expect(200)).body.data).toMatchObject({
      bounty_held: '5.00',
      title: 'Shorter contract',
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '45.00', frozen: '5.00' });
    const tooMuch = await put({ bounty_amount: '60.00', title: 'Never saved' }).expect(402);
    expect(tooMuch.body).toMatchObject({ code: 4020, data: { available: '45.00', required: '55.00' } });
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
      title: 'Shorter contract',
      bounty_held: '5.00',
    });
    expect((await put({ bounty_amount: null }).expect(200)).body.data).toMatchObject({ bounty_amount: null, bounty_held: '0.00' });
    expect(await balance(test, publisher)).toMatchObject({ available: '50.00', frozen: '0.00' });
    await expectBooks();
  });

  it('lets only the publisher change or close it, and only while draft or open', async () => {
    const publisher = await funded();
    const task = await publish(publisher, { bounty_amount: '10.00' });
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(other.headers).send({ title: 'x' }).expect(403)).body.code).toBe(4030);
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(human.headers).send({ title: 'x' }).expect(404)).body.code).toBe(4040);
    expect((await post(other, {}, `/api/v1/tasks/${task.id}/close`).expect(403)).body.code).toBe(4030);
    const closed = (await post(publisher, { reason: 'found someone' }, `/api/v1/tasks/${task.id}/close`).expect(200)).body.data;
    expect(closed).toMatchObject({ status: 'closed', bounty_held: '0.00' });
    expect(closed.ended_at).toEqual(expect.any(String));
    expect(await balance(test, publisher)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect((await post(publisher, {}, `/api/v1/tasks/${task.id}/close`).expect(409)).body).toMatchObject({
      code: 4090,
      data: { status: 'closed', action: 'close' },
    });
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ title: 'x' }).expect(409)).body.code).toBe(4090);
    expect((await taskEntries(task.id)).map((entry) => entry.type)).toEqual(['freeze', 'freeze', 'unfreeze', 'unfreeze']);
    await expectBooks();
  });

  it('is taken down by the operator (cancelled, hold released); user credentials cannot', async () => {
    const publisher = await funded();
    const task = await publish(publisher, { bounty_amount: '40.00' });
    expect((await test.http.post(`/api/v1/admin/tasks/${task.id}/cancel`).set(publisher.headers).expect(401)).body.code).toBe(4010);
    expect((await test.http.post(`/api/v1/admin/tasks/${task.id}/cancel`).set(admin).expect(200)).body.data).toMatchObject({
      status: 'cancelled',
      bounty_held: '0.00',
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect((await test.http.post(`/api/v1/admin/tasks/${task.id}/cancel`).set(admin).expect(409)).body.code).toBe(4090);
    expect((await test.http.post(`/api/v1/admin/tasks/${randomUUID()}/cancel`).set(admin).expect(404)).body.code).toBe(4040);
  });

  it(raceTest('expires open tasks past their deadline once, even with two sweepers at once, releasing each hold once'), async () => {
    const publisher = await funded();
    const tasks = [];
    for (let index = 0; index < 5; index++)
      tasks.push(await publish(publisher, { bounty_amount: '3.00', expires_at: new Date(test.clock.now.getTime() + 3_600_000).toISOString() }));
    const later = await publish(publisher, { bounty_amount: '4.00' });
    expect(await balance(test, publisher)).toMatchObject({ frozen: '19.00' });
    test.clock.advanceMs(3_600_001);
    await Promise.all([test.runtime.engine.sweeper.runOnce(), test.runtime.engine.sweeper.runOnce()]);
    for (const task of tasks) {
      expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
        status: 'expired',
        bounty_held: '0.00',
      });
      expect((await taskEntries(task.id)).filter((entry) => entry.type === 'unfreeze')).toHaveLength(2);
    }
    expect((await test.http.get(`/api/v1/tasks/${later.id}`).set(publisher.headers).expect(200)).body.data.status).toBe('open');
    expect(await balance(test, publisher)).toMatchObject({ available: '96.00', frozen: '4.00' });
    await expectBooks();
  });

  it(raceTest('never leaves a hold without its task under parallel publishes and closes'), async () => {
    const publisher = await funded('200.00');
    const drafts = [];
    for (let index = 0; index < 10; index++) drafts.push(await publish(publisher, { draft: true, bounty_amount: '15.00' }));
    await Promise.all(
      drafts.flatMap((draft) => [
        post(publisher, { delivery_hours: 5 }, `/api/v1/tasks/${draft.id}/publish-draft`),
        post(publisher, {}, `/api/v1/tasks/${draft.id}/close`),
      ]),
    );
    const rows = (await test.runtime.engine.dependencies
      .db('tasks')
      .whereIn(
        'id',
        drafts.map((draft) => draft.id),
      )
      .select('status', 'bounty_held')) as { status: string; bounty_held: string }[];
    for (const row of rows) expect(row.status === 'open' ? row.bounty_held === '1500' : row.bounty_held === '0').toBe(true);
    const held = rows.reduce((sum, row) => sum + BigInt(row.bounty_held), 0n);
    expect((await balance(test, publisher)).frozen).toBe(`${held / 100n}.00`);
    await expectBooks();
  });
});

describe('reusing a task', () => {
  it('needs delivery_hours and bounty_amount again, naming each missing one, then publishes a new task', async () => {
    const publisher = await funded();
    const old = await publish(publisher, { bounty_amount: '10.00', delivery_hours: 12, tags: ['legal'] });
    const missing = await post(publisher, {}, `/api/v1/tasks/${old.id}/reuse`).expect(400);
    expect(missing.body.data.errors.map((error: { path: string }) => error.path).sort()).toEqual(['body.bounty_amount', 'body.delivery_hours']);
    const reused = (
      await post(publisher, { delivery_hours: 6, bounty_amount: '7.00', title: 'Translate another contract' }, `/api/v1/tasks/${old.id}/reuse`).expect(201)
    ).body.data;
    expect(reused).toMatchObject({
      status: 'open',
      reused_from: old.id,
      title: 'Translate another contract',
      description: valid.description,
      tags: ['legal'],
      bounty_held: '7.00',
      delivery_hours: 6,
    });
    expect(reused.id).not.toBe(old.id);
    expect(await balance(test, publisher)).toMatchObject({ frozen: '17.00' });
    expect((await post(other, { delivery_hours: 6, bounty_amount: null }, `/api/v1/tasks/${old.id}/reuse`).expect(403)).body.code).toBe(4030);
    expect((await post(publisher, { delivery_hours: 6, bounty_amount: null, mode: 'offline' }, `/api/v1/tasks/${old.id}/reuse`).expect(400)).body.code).toBe(
      4000,
    );
    await expectBooks();
  });
});

describe('creating a task: validation', () => {
  const refusals: [string, Record<string, unknown>, string][] = [
    ['no title', { title: undefined }, 'body.title'],
    ['no description', { description: undefined }, 'body.description'],
    ['no mode', { mode: undefined }, 'body.mode'],
    ['a title over 200 characters', { title: 't'.repeat(201) }, 'body.title'],
    ['a description over 10,000 characters', { description: 'd'.repeat(10_001) }, 'body.description'],
    ['offline without a city', { mode: 'offline' }, 'body.city'],
    ['an unknown category', { category: 'cooking' }, 'body.category'],
    ['four image URLs', { image_urls: ['https://a.example/1', 'https://a.example/2', 'https://a.example/3', 'https://a.example/4'] }, 'body.image_urls'],
    ['an http image URL', { image_urls: ['http://a.example/1'] }, 'body.image_urls.0'],
    ['contact_info without a value', { contact_info: { type: 'email' } }, 'body.contact_info.value'],
    ['contact_info with an extra member', { contact_info: { type: 'email', value: 'a@b.c', note: 'x' } }, 'body.contact_info'],
    ['a negative bounty', { bounty_amount: '-1' }, 'body.bounty_amount'],
    ['zero delivery hours', { delivery_hours: 0 }, 'body.delivery_hours'],
    ['an unknown billing model', { preferred_billing_model: 'per_minute' }, 'body.preferred_billing_model'],
    ['a zero quantity', { estimated_quantity: 0 }, 'body.estimated_quantity'],
    ['a deadline in the past', { expires_at: '2020-01-01T00:00:00Z' }, 'body.expires_at'],
    ['a deadline beyond 90 days', { expires_at: '2099-01-01T00:00:00Z' }, 'body.expires_at'],
    ['owner_type from the caller', { owner_type: 'human' }, 'body'],
    ['status from the caller', { status: 'open' }, 'body'],
  ];
  it.each(refusals)('refuses %s with 4000 naming the field, holding nothing', async (_name, change, path) => {
    const publisher = await funded();
    const response = await post(publisher, { ...valid, bounty_amount: '5.00', ...change }).expect(400);
    expect(response.body.code).toBe(4000);
    expect((response.body.data.errors as { path: string }[]).map((error) => error.path)).toContain(path);
    expect(await balance(test, publisher)).toMatchObject({ available: '100.00', frozen: '0.00' });
  });

  it('refuses callers without or with mixed credentials', async () => {
    expect((await test.http.post('/api/v1/tasks/').send(valid).expect(401)).body.code).toBe(4010);
    const agent = await createAgent(test);
    expect(
      (
        await test.http
          .post('/api/v1/tasks')
          .set({ ...agent.headers, Authorization: `Bearer ${human.token}` })
          .send(valid)
          .expect(400)
      ).body.code,
    ).toBe(4011);
  });

  it('publishes once for one Idempotency-Key, holding once', async () => {
    const publisher = await funded();
    const key = randomUUID();
    const first = await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .set('Idempotency-Key', key)
      .send({ ...valid, bounty_amount: '9.00' })
      .expect(201);
    const again = await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .set('Idempotency-Key', key)
      .send({ ...valid, bounty_amount: '9.00' })
      .expect(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await balance(test, publisher)).toMatchObject({ frozen: '9.00' });
  });
});

describe('my tasks, details, the hall and the market statistics', () => {
  it("lists the caller's tasks of this space, newest first, with a status filter", async () => {
    const publisher = await funded();
    const open = await publish(publisher, { title: 'One' });
    const draft = await publish(publisher, { title: 'Two', draft: true });
    const list = (await test.http.get('/api/v1/tasks/').set(publisher.headers).expect(200)).body.data;
    expect(list.items.map((item: Task) => item.id)).toEqual([draft.id, open.id]);
    expect(
      (await test.http.get('/api/v1/tasks').set(publisher.headers).query({ status: 'draft' }).expect(200)).body.data.items.map((item: Task) => item.id),
    ).toEqual([draft.id]);
    expect((await test.http.get('/api/v1/tasks/').set(publisher.headers).query({ status: 'gone' }).expect(400)).body.code).toBe(4000);
  });

  it('shows contact_info to the publisher only, and a task to its space only', async () => {
    const publisher = await funded();
    const task = await publish(publisher, { contact_info: { type: 'email', value: 'me@example.com' } });
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data.contact_info).toEqual({
      type: 'email',
      value: 'me@example.com',
    });
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(other.headers).expect(200)).body.data.contact_info).toBeNull();
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(human.headers).expect(404)).body.code).toBe(4040);
  });

  it("shows open tasks of the caller's space in the hall, in every order through the cursor, and ranks a text query", async () => {
    const city = `Town${randomUUID().slice(0, 6)}`;
    const publisher = await funded('500.00');
    const bounties = ['5.00', null, '12.00', '1.00'];
    const ids = [];
    for (const [index, bounty] of bounties.entries()) {
      ids.push(
        (
          await publish(publisher, {
            title: `Errand ${index}`,
            mode: 'offline',
            city,
            category: 'life_service',
            ...(bounty ? { bounty_amount: bounty } : {}),
            expires_at: new Date(test.clock.now.getTime() + (10 - index) * 3_600_000).toISOString(),
          })
        ).id,
      );
      test.clock.advanceMs(1000);
    }
    const closed = await publish(publisher, { title: 'Closed errand', mode: 'offline', city });
    await post(publisher, {}, `/api/v1/tasks/${closed.id}/close`).expect(200);
    await publish(human, { title: 'Human errand', mode: 'offline', city });
    const walk = async (query: Record<string, unknown>) => {
      const items: Task[] = [];
      let cursor: string | null = null;
      do {
        const page: { items: Task[]; next_cursor: string | null } = (
          await test.http
            .get('/api/v1/tasks/hall')
            .set(other.headers)
            .query({ city, page_size: 2, ...query, ...(cursor ? { cursor } : {}) })
            .expect(200)
        ).body.data;
        items.push(...page.items);
        cursor = page.next_cursor;
      } while (cursor);
      return items;
    };
    expect((await walk({})).map((item) => item.id)).toEqual([...ids].reverse());
    expect((await walk({ sort: 'bounty_desc' })).map((item) => item.bounty_amount)).toEqual(['12.00', '5.00', '1.00', null]);
    expect((await walk({ sort: 'bounty_asc' })).map((item) => item.bounty_amount)).toEqual(['1.00', '5.00', '12.00', null]);
    expect((await walk({ sort: 'deadline' })).map((item) => item.id)).toEqual([...ids].reverse());
    expect((await walk({ min_bounty: '2', max_bounty: '12' })).map((item) => item.bounty_amount).sort()).toEqual(['12.00', '5.00']);
    const humanHall = (await test.http.get('/api/v1/tasks/hall').set(human.headers).query({ city }).expect(200)).body.data;
    expect(humanHall.items.map((item: Task) => item.title)).toEqual(['Human errand']);
    const word = `w${randomUUID().slice(0, 8)}`;
    const wanted = await publish(publisher, { title: `Proofread a ${word} thesis`, description: 'Academic English proofreading' });
    const ranked = (
      await test.http
        .get('/api/v1/tasks/hall')
        .set(other.headers)
        .query({ q: `${word} proofreading` })
        .expect(200)
    ).body.data;
    expect(ranked).toMatchObject({ sort: 'relevance' });
    expect(ranked.items[0].id).toBe(wanted.id);
    for (const query of [{ sort: 'relevance' }, { sort: 'cheapest' }, { min_bounty: '5', max_bounty: '1' }, { cursor: 'nope' }]) {
      expect((await test.http.get('/api/v1/tasks/hall').set(other.headers).query(query).expect(400)).body.code).toBe(4000);
    }
  });

  it("counts the market of the caller's space: by status, by category, and the open bounties", async () => {
    const stats = (await test.http.get('/api/v1/tasks/market/stats').set(other.headers).expect(200)).body.data;
    const rows = (await test.runtime.engine.dependencies.db('tasks').where('owner_type', 'agent').select('status', 'bounty_amount')) as {
      status: string;
      bounty_amount: string | null;
    }[];
    expect(stats).toMatchObject({ owner_type: 'agent', currency: 'UT' });
    for (const status of ['draft', 'open', 'closed', 'cancelled', 'expired', 'matched'])
      expect(stats.by_status[status]).toBe(rows.filter((row) => row.status === status).length);
    const openBounties = rows.filter((row) => row.status === 'open' && row.bounty_amount !== null).map((row) => BigInt(row.bounty_amount!));
    expect(stats.open_bounty.count).toBe(openBounties.length);
    expect(stats.open_bounty.total).toBe(
      `${openBounties.reduce((sum, value) => sum + value, 0n) / 100n}.${String(openBounties.reduce((sum, value) => sum + value, 0n) % 100n).padStart(2, '0')}`,
    );
    const humanStats = (await test.http.get('/api/v1/tasks/market/stats').set(human.headers).expect(200)).body.data;
    expect(humanStats).toMatchObject({ owner_type: 'human', currency: 'CNY' });
    expect(humanStats.by_status.open).toBe(
      Number(
        ((await test.runtime.engine.dependencies.db('tasks').where({ owner_type: 'human', status: 'open' }).count('* as count')) as { count: string }[])[0]!
          .count,
      ),
    );
  });
});
