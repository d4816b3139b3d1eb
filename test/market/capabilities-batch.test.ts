import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { sellerCallbackUrl } from '../helpers/market.ts';

let test: TestApp;
let agent: Actor;
let human: Actor & { token: string };

beforeAll(async () => {
  test = await startTestApp();
  agent = await createAgent(test);
  human = await signUpHuman(test);
});
afterAll(() => test.close());

const item = (title: string, extra: Record<string, unknown> = {}) => ({
  title,
  description: 'Batch registered',
  category: 'data',
  capability_type: 'tool',
  pricing_model: 'per_use',
  price_ut: '3.00',
  callback_url: sellerCallbackUrl,
  ...extra,
});
const batch = (actor: { headers: Record<string, string> }, body: unknown, key?: string) => {
  const request = test.http.post('/api/v1/capabilities/batch').set(actor.headers);
  return (key ? request.set('Idempotency-Key', key) : request).send(body as object);
};
const ownedBy = (userId: string) => test.runtime.database.db('capabilities').where({ owner_user_id: userId });

describe('POST /api/v1/capabilities/batch', () => {
  it('registers every valid item and answers each with its capability and callback secret', async () => {
    const seller = await createAgent(test);
    const response = await batch(seller, { items: [item('First'), item('Second', { pricing_model: 'per_hour', callback_url: undefined })] }).expect(200);
    expect(response.body.code).toBe(0);
    const data = response.body.data;
    expect(data).toMatchObject({ total: 2, succeeded: 2, failed: 0 });
    expect(data.results.map((result: { index: number; success: boolean }) => [result.index, result.success])).toEqual([
      [0, true],
      [1, true],
    ]);
    const [first, second] = data.results.map((result: { data: Record<string, unknown> }) => result.data);
    expect(first).toMatchObject({
      title: 'First',
      agent_id: seller.userId,
      owner_type: 'agent',
      price_ut: '3.00',
      callback_timeout_sec: 30,
      callback_secret: expect.stringMatching(/^cbs_/),
    });
    expect(second).toMatchObject({ title: 'Second', pricing_model: 'per_hour' });
    expect(first.callback_secret).not.toBe(second.callback_secret);
    const { callback_secret: _secret, ...shown } = first;
    expect((await test.http.get(`/api/v1/capabilities/${first.id}`).set(seller.headers).expect(200)).body.data).toEqual(shown);
    expect(await ownedBy(seller.userId)).toHaveLength(2);
  });

  it('registers the good items and reports each bad one with the error a single create would give', async () => {
    const seller = await createAgent(test);
    const items = [
      item('Good 0'),
      item('x'.repeat(201)),
      'not an object',
      null,
      item('No callback', { callback_url: undefined }),
      item('Good 5'),
      item('Keyed', { idempotency_key: 'k' }),
    ];
    const data = (await batch(seller, { items }).expect(200)).body.data;
    expect(data).toMatchObject({ total: 7, succeeded: 2, failed: 5 });
    expect(data.results.map((result: { success: boolean }) => result.success)).toEqual([true, false, false, false, false, true, false]);
    expect(data.results[1]).toEqual({
      index: 1,
      success: false,
      error: { code: 4000, message: 'validation_error', data: { errors: [{ path: 'body.items.1.title', message: expect.any(String) }] } },
    });
    expect(data.results[2].error.data.errors[0].path).toBe('body.items.2');
    expect(data.results[3].error).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.items.3' }] } });
    expect(data.results[4].error.data.errors[0].path).toBe('body.items.4.callback_url');
    expect(data.results[6].error.data.errors[0].path).toBe('body.items.6');
    for (const result of data.results) expect(result.success ? 'data' in result && !('error' in result) : 'error' in result && !('data' in result)).toBe(true);
    expect((await ownedBy(seller.userId)).map((row: { title: string }) => row.title).sort()).toEqual(['Good 0', 'Good 5']);
  });

  it('answers 200 with every item failed when none is valid', async () => {
    const seller = await createAgent(test);
    const data = (await batch(seller, { items: [{}, item('Bad', { category: 'astrology' })] }).expect(200)).body.data;
    expect(data).toMatchObject({ total: 2, succeeded: 0, failed: 2 });
    expect(await ownedBy(seller.userId)).toHaveLength(0);
  });

  it('takes 50 items and refuses 51 as a whole with 4000, registering none', async () => {
    const seller = await createAgent(test);
    const many = (count: number) => Array.from({ length: count }, (_, index) => item(`Item ${index}`));
    const refused = await batch(seller, { items: many(51) }).expect(400);
    expect(refused.body.code).toBe(4000);
    expect(refused.body.data.errors[0].path).toBe('body.items');
    expect(await ownedBy(seller.userId)).toHaveLength(0);
    const data = (await batch(seller, { items: many(50) }).expect(200)).body.data;
    expect(data).toMatchObject({ total: 50, succeeded: 50, failed: 0 });
    expect(data.results.map((result: { index: number; data: { title: string } }) => [result.index, result.data.title])).toEqual(
      many(50).map((entry, index) => [index, entry.title]),
    );
  });

  it.each([
    ['no items', {}, 'body.items'],
    ['an empty items array', { items: [] }, 'body.items'],
    ['items that is not an array', { items: item('Lonely') }, 'body.items'],
    ['an unknown field beside items', { items: [item('Fine')], colour: 'blue' }, 'body'],
  ])('refuses %s with 4000 for the whole call', async (_name, body, path) => {
    const response = await batch(agent, body).expect(400);
    expect(response.body.code).toBe(4000);
    expect(response.body.data.errors.map((error: { path: string }) => error.path)).toContain(path);
  });

  it('refuses a body that is a JSON array with 4001', async () => {
    expect((await batch(agent, [item('Array')]).expect(400)).body.code).toBe(4001);
  });

  it('registers in the caller space: a human batch makes human capabilities the agent space cannot see', async () => {
    const data = (await batch(human, { items: [item('Human offer')] }).expect(200)).body.data;
    const created = data.results[0].data;
    expect(created).toMatchObject({ owner_type: 'human', currency: 'CNY', agent_id: human.userId });
    expect((await test.http.get(`/api/v1/capabilities/${created.id}`).set(agent.headers).expect(404)).body.code).toBe(4040);
  });

  it('replays the whole answer for a repeated Idempotency-Key, and refuses the key with another body (4220)', async () => {
    const seller = await createAgent(test);
    const key = randomUUID();
    const body = { items: [item('Once'), { title: 'bad' }] };
    const first = await batch(seller, body, key).expect(200);
    const again = await batch(seller, body, key).expect(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await ownedBy(seller.userId)).toHaveLength(1);
    expect((await batch(seller, { items: [item('Other')] }, key).expect(422)).body.code).toBe(4220);
    // The key in the body works the same way.
    const replayed = await batch(seller, { ...body, idempotency_key: key }).expect(200);
    expect(replayed.body.data).toEqual(first.body.data);
  });

  it('refuses no credentials and a bad token with 4010, mixed credentials with 4011', async () => {
    expect((await batch({ headers: {} }, { items: [item('x')] }).expect(401)).body.code).toBe(4010);
    expect((await batch({ headers: { Authorization: 'Bearer not.a.token' } }, { items: [item('x')] }).expect(401)).body.code).toBe(4010);
    expect((await batch({ headers: { ...agent.headers, ...human.headers } }, { items: [item('x')] }).expect(400)).body.code).toBe(4011);
  });

  it('is not mistaken for a capability id: GET /capabilities/batch is 405 with Allow: POST, not a 400 saying batch is not a UUID', async () => {
    const answer = await test.http.get('/api/v1/capabilities/batch').set(agent.headers).expect(405);
    expect(answer.headers.allow).toBe('POST');
    expect(answer.body.code).toBe(4050);
  });
});
