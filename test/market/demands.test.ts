import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { type TestApp, startTestApp } from '../helpers/app.ts';
import { createDemand } from '../helpers/demands.ts';

describe('demands: create, list, details, cancel, expiry', () => {
  let test: TestApp;
  let agent: Awaited<ReturnType<typeof createAgent>>;
  let otherAgent: Awaited<ReturnType<typeof createAgent>>;
  let human: Awaited<ReturnType<typeof signUpHuman>>;
  const post = (headers: Record<string, string>, body: unknown) =>
    test.http
      .post('/api/v1/demands')
      .set(headers)
      .send(body as object);

  beforeAll(async () => {
    test = await startTestApp();
    agent = await createAgent(test);
    otherAgent = await createAgent(test);
    human = await signUpHuman(test);
  });
  afterAll(() => test.close());

  it('creates a demand owned by the caller in its space, with defaults', async () => {
    const response = await post(agent.headers, { description: 'Translate a contract into Chinese', max_price_ut: '12.5' }).expect(201);
    expect(response.body.data).toMatchObject({
      user_id: agent.userId,
      owner_type: 'agent',
      currency: 'UT',
      max_price_ut: '12.50',
      auto_accept: false,
      demand_type: 'explicit',
      status: 'open',
      title: null,
      tags: [],
      expires_at: null,
      transaction_id: null,
    });
    const humanDemand = await post(human.headers, {
      description: '设计一个logo',
      demand_type: 'implicit',
      title: 'Logo',
      tags: ['logo'],
      category: 'design',
    }).expect(201);
    expect(humanDemand.body.data).toMatchObject({
      owner_type: 'human',
      currency: 'CNY',
      demand_type: 'implicit',
      title: 'Logo',
      tags: ['logo'],
      category: 'design',
      max_price_ut: null,
    });
  });

  it.each([
    ['no description', {}],
    ['an empty description', { description: '   ' }],
    ['a description over 10000 characters', { description: 'x'.repeat(10_001) }],
    ['a title over 200 characters', { description: 'd', title: 't'.repeat(201) }],
    ['three fraction digits', { description: 'd', max_price_ut: '1.005' }],
    ['a negative budget', { description: 'd', max_price_ut: -1 }],
    ['auto_accept without a budget', { description: 'd', auto_accept: true }],
    ['an unknown demand_type', { description: 'd', demand_type: 'urgent' }],
    ['an expires_at that is not a datetime', { description: 'd', expires_at: 'tomorrow' }],
    ['an unknown category', { description: 'd', category: 'astrology' }],
    ['an unknown field', { description: 'd', owner_type: 'human' }],
  ])('refuses %s with 4000', async (_name, body) => {
    const response = await post(agent.headers, body).expect(400);
    expect(response.body.code).toBe(4000);
  });

  it('refuses callers without credentials (4010) and with mixed credentials (4011)', async () => {
    expect((await test.http.post('/api/v1/demands').send({ description: 'd' }).expect(401)).body.code).toBe(4010);
    expect((await post({ ...agent.headers, ...human.headers }, { description: 'd' }).expect(400)).body.code).toBe(4011);
    expect((await test.http.get('/api/v1/demands').expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .get(`/api/v1/demands/${randomUUID()}`)
          .set({ ...agent.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
  });

  it('replays a create under the same idempotency key, and refuses the key with another body (4220)', async () => {
    const key = randomUUID();
    const first = await post({ ...agent.headers, 'Idempotency-Key': key }, { description: 'Scrape product prices' }).expect(201);
    const again = await post({ ...agent.headers, 'Idempotency-Key': key }, { description: 'Scrape product prices' }).expect(201);
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect((await post({ ...agent.headers, 'Idempotency-Key': key }, { description: 'Something else' }).expect(422)).body.code).toBe(4220);
  });

  it("lists only the caller's own demands of its space, newest first, with page/page_size and cursor", async () => {
    const lister = await createAgent(test);
    const ids = [];
    for (const description of ['first need', 'second need', 'third need']) ids.push((await createDemand(test, lister, { description })).id);
    await createDemand(test, otherAgent, { description: 'not the lister’s' });
    const page1 = await test.http.get('/api/v1/demands?page_size=2').set(lister.headers).expect(200);
    expect(page1.body.data).toMatchObject({ total: 3, page: 1, page_size: 2, has_more: true });
    expect(page1.body.data.items.map((item: { id: string }) => item.id)).toEqual([ids[2], ids[1]]);
    const byCursor = await test.http.get(`/api/v1/demands?page_size=2&cursor=${page1.body.data.next_cursor}`).set(lister.headers).expect(200);
    expect(byCursor.body.data.items.map((item: { id: string }) => item.id)).toEqual([ids[0]]);
    expect(byCursor.body.data.has_more).toBe(false);
    const page2 = await test.http.get('/api/v1/demands?page=2&page_size=2').set(lister.headers).expect(200);
    expect(page2.body.data.items.map((item: { id: string }) => item.id)).toEqual([ids[0]]);
  });

  it.each([
    ['page_size 0', 'page_size=0'],
    ['page_size 101', 'page_size=101'],
    ['page 0', 'page=0'],
    ['an unknown status', 'status=done'],
    ['a foreign cursor', 'cursor=abc'],
  ])('refuses a list with %s (4000)', async (_name, query) => {
    expect((await test.http.get(`/api/v1/demands?${query}`).set(agent.headers).expect(400)).body.code).toBe(4000);
  });

  it('keeps the spaces apart: the human space of the same user lists and sees none of its agent demands', async () => {
    const person = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, person.userId);
    const asAgent = { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': person.userId };
    const agentDemand = await createDemand(test, { userId: person.userId, headers: asAgent }, { description: 'agent-space need' });
    const listed = await test.http.get('/api/v1/demands').set(person.headers).expect(200);
    expect(listed.body.data.total).toBe(0);
    expect((await test.http.get(`/api/v1/demands/${agentDemand.id}`).set(person.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.post(`/api/v1/demands/${agentDemand.id}/cancel`).set(person.headers).expect(404)).body.code).toBe(4040);
  });

  it('shows an open demand to others of its space, and hides it once it is no longer open', async () => {
    const demand = await createDemand(test, agent, { description: 'Need a weather API' });
    await test.http.get(`/api/v1/demands/${demand.id}`).set(agent.headers).expect(200);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(otherAgent.headers).expect(200)).body.data.id).toBe(demand.id);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(human.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(otherAgent.headers).expect(403)).body.code).toBe(4030);
    const cancelled = await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(agent.headers).expect(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled' });
    expect(cancelled.body.data.cancelled_at).not.toBeNull();
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(otherAgent.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(agent.headers).expect(200)).body.data.status).toBe('cancelled');
    const twice = await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(agent.headers).expect(409);
    expect(twice.body).toMatchObject({ code: 4090, data: { status: 'cancelled', action: 'cancel' } });
  });

  it('answers 4040 for an unknown demand and 4000 for an id that is not a uuid', async () => {
    expect((await test.http.get(`/api/v1/demands/${randomUUID()}`).set(agent.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.post(`/api/v1/demands/${randomUUID()}/cancel`).set(agent.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get('/api/v1/demands/not-a-uuid').set(agent.headers).expect(400)).body.code).toBe(4000);
  });

  it('refuses an expires_at that is not after now by the engine clock with 4000 at body.expires_at', async () => {
    const requester = await createAgent(test);
    const now = test.runtime.engine.dependencies.now().getTime();
    for (const expiresAt of [now - 60_000, now]) {
      const response = await post(requester.headers, { description: 'Already over', expires_at: new Date(expiresAt).toISOString() }).expect(400);
      expect(response.body.code).toBe(4000);
      expect(response.body.data.errors).toEqual([{ path: 'body.expires_at', message: expect.any(String) }]);
    }
    const future = await post(requester.headers, { description: 'Still to come', expires_at: new Date(now + 60_000).toISOString() }).expect(201);
    expect(future.body.data.status).toBe('open');
  });

  it('expires a demand at expires_at by the engine clock: shown expired, listed as expired, not cancellable, hidden from others', async () => {
    const requester = await createAgent(test);
    const expiresAt = new Date(test.runtime.engine.dependencies.now().getTime() + 60 * 60 * 1000).toISOString();
    const demand = await createDemand(test, requester, { description: 'Short-lived need', expires_at: expiresAt });
    expect(demand.status).toBe('open');
    expect((await test.http.get('/api/v1/demands?status=open').set(requester.headers).expect(200)).body.data.total).toBe(1);
    test.clock.advanceMs(2 * 60 * 60 * 1000);
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(requester.headers).expect(200)).body.data.status).toBe('expired');
    expect((await test.http.get('/api/v1/demands?status=open').set(requester.headers).expect(200)).body.data.total).toBe(0);
    const expired = await test.http.get('/api/v1/demands?status=expired').set(requester.headers).expect(200);
    expect(expired.body.data.items.map((item: { id: string }) => item.id)).toEqual([demand.id]);
    expect((await test.http.post(`/api/v1/demands/${demand.id}/cancel`).set(requester.headers).expect(409)).body.data).toMatchObject({
      status: 'expired',
      action: 'cancel',
    });
    expect((await test.http.get(`/api/v1/demands/${demand.id}`).set(otherAgent.headers).expect(404)).body.code).toBe(4040);
  });
});
