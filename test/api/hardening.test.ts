import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, admin, agentMarket, balance, buy } from '../helpers/market.ts';
import { signUpHuman } from '../helpers/actors.ts';

/** Odd requests a hostile or careless client sends: each gets a 4xx envelope, never a 500. */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { inner: nested(depth - 1) });

describe('one spelling per route', () => {
  it('answers a trailing slash or another letter case with 4040 and creates nothing', async () => {
    const { buyer, capability } = await agentMarket(test);
    const key = randomUUID();
    const body = { capability_id: capability.id };
    await test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', key).send(body).expect(201);
    expect((await test.http.post('/api/v1/transactions/').set(buyer.headers).set('Idempotency-Key', key).send(body).expect(404)).body.code).toBe(4040);
    expect((await test.http.post('/API/v1/Transactions').set(buyer.headers).set('Idempotency-Key', key).send(body).expect(404)).body.code).toBe(4040);
    const list = await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200);
    expect(list.body.data.total).toBe(1);
  });

  it('credits once for one key, however the URL is spelled', async () => {
    const { buyer } = await agentMarket(test, '0');
    const key = randomUUID();
    const body = { user_id: buyer.userId, currency: 'UT', amount: '5.00' };
    await test.http.post('/api/v1/admin/wallet/credit').set(admin).set('Idempotency-Key', key).send(body).expect(200);
    await test.http.post('/api/v1/admin/wallet/credit/').set(admin).set('Idempotency-Key', key).send(body).expect(404);
    expect(await balance(test, buyer)).toMatchObject({ available: '5.00' });
  });

  it('replays a retried action whose id is written in another letter case', async () => {
    const { buyer, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    const key = randomUUID();
    const first = await test.http.post(`/api/v1/transactions/${id}/freeze`).set(buyer.headers).set('Idempotency-Key', key).expect(200);
    const retry = await test.http.post(`/api/v1/transactions/${id.toUpperCase()}/freeze`).set(buyer.headers).set('Idempotency-Key', key).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data).toEqual(first.body.data);
  });

  it('answers OPTIONS with the envelope and an Allow header, not a bare Allow list', async () => {
    const known = await test.http.options('/api/v1/transactions').expect(405);
    expect(known.body.code).toBe(4050);
    expect(known.headers.allow).toBe('GET, HEAD, POST');
    expect((await test.http.options('/api/v1/transactions/').expect(404)).body.code).toBe(4040);
  });
});

describe('text and JSON the database cannot store', () => {
  it('refuses the NUL character in a string or a key with 4000', async () => {
    const { seller } = await agentMarket(test);
    const capability = {
      title: 'a\u0000b',
      description: 'x',
      category: 'data',
      capability_type: 'tool',
      pricing_model: 'per_use',
      callback_url: 'https://seller.example/callback',
    };
    const refused = await test.http.post('/api/v1/capabilities').set(seller.headers).send(capability).expect(400);
    expect(refused.body).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.title' }] } });
    const { buyer, capability: offer } = await agentMarket(test);
    const { id } = await buy(test, buyer, offer.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept'); // not the seller of this one: only the body check matters below
    const badKey = await test.http
      .post(`/api/v1/transactions/${id}/deliver`)
      .set(seller.headers)
      .send({ result_payload: { 'k\u0000': 1 } })
      .expect(400);
    expect(badKey.body.code).toBe(4000);
  });

  it('refuses the NUL character in a query value with 4000 naming it, on every list that takes free text', async () => {
    const { buyer } = await agentMarket(test);
    const human = await signUpHuman(test);
    const refused: [string, Record<string, string>, string][] = [
      ['/api/v1/capabilities?q=a%00b', buyer.headers, 'query.q'],
      ['/api/v1/skills/hall?city=%00', human.headers, 'query.city'],
      ['/api/v1/tasks/hall?city=a%00', human.headers, 'query.city'],
      ['/api/v1/tasks/hall?q=%00x', buyer.headers, 'query.q'],
      ['/api/v1/public/tasks/hall?city=%00', {}, 'query.city'],
      ['/api/v1/public/skills/hall?city=%00', {}, 'query.city'],
    ];
    for (const [path, headers, field] of refused) {
      const answer = await test.http.get(path).set(headers);
      expect({ path, status: answer.status, body: answer.body }).toMatchObject({
        path,
        status: 400,
        body: { code: 4000, data: { errors: [{ path: field }] } },
      });
    }
  });

  it('refuses JSON nested deeper than the limit with 4000, over REST and JSON-RPC', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    const deep = await act(test, seller, id, 'deliver', { result_payload: nested(200) as Record<string, unknown> }).expect(400);
    expect(deep.body.code).toBe(4000);
    expect((await test.http.get(`/api/v1/transactions/${id}`).set(seller.headers).expect(200)).body.data.status).toBe('accepted');
    const rpc = await test.http
      .post('/api/v1/rpc')
      .set(buyer.headers)
      .send({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x', extra: nested(200) } })
      .expect(200);
    expect(rpc.body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
    const withNul = await test.http
      .post('/api/v1/rpc')
      .set(buyer.headers)
      .send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: 'a\u0000b' } })
      .expect(200);
    expect(withNul.body.error).toMatchObject({ code: -32602, data: { code: 4000 } });
  });
});

describe('malformed HTTP', () => {
  it('answers a malformed percent-encoding in the path with 4000', async () => {
    const { buyer } = await agentMarket(test);
    for (const path of ['/api/v1/transactions/%zz', '/api/v1/capabilities/%E0%A4%A']) {
      const response = await test.http.get(path).set(buyer.headers);
      expect(response.status, path).toBe(400);
      expect(response.body.code).toBe(4000);
    }
  });

  it('answers a body that does not decompress with 4001', async () => {
    const response = await test.http
      .post('/api/v1/auth/login')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .send(Buffer.from('not gzip at all'))
      .expect(400);
    expect(response.body.code).toBe(4001);
    const brotli = await test.http
      .post('/api/v1/auth/login')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'br')
      .send(gzipSync(Buffer.from('{"email":"a@b.co","password":"x"}')))
      .expect(400);
    expect(brotli.body.code).toBe(4001);
  });

  it('answers the RPC path in another letter case at once, with 4040', async () => {
    const { buyer } = await agentMarket(test);
    const response = await test.http
      .post('/API/v1/rpc')
      .set(buyer.headers)
      .send({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } })
      .expect(404);
    expect(response.body.code).toBe(4040);
  });

  it('refuses page numbers written in hex or with an exponent', async () => {
    const { buyer } = await agentMarket(test);
    for (const query of ['page=0x10', 'page_size=1e2', 'page=1.5']) {
      expect((await test.http.get(`/api/v1/transactions?${query}`).set(buyer.headers).expect(400)).body.code, query).toBe(4000);
    }
  });

  it('refuses a cursor whose timestamp is out of range with 4000', async () => {
    const { buyer } = await agentMarket(test);
    const cursor = Buffer.from(JSON.stringify(['0000-01-01T00:00:00.000Z', randomUUID()])).toString('base64url');
    expect((await test.http.get(`/api/v1/transactions?cursor=${cursor}`).set(buyer.headers).expect(400)).body.code).toBe(4000);
  });
});

describe('null for an optional field', () => {
  it('is taken as the field left out on a create, as client libraries send it; null for a required field is still 4000', async () => {
    const { buyer, capability } = await agentMarket(test);
    const bought = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id, demand_id: null, context_id: null, booked_hours: null })
      .expect(201);
    expect(bought.body.data).toMatchObject({ capability_id: capability.id, demand_id: null, booked_hours: null, price_ut: '10.00' });
    const publisher = await signUpHuman(test);
    const task = await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ title: 'Walk a dog', description: 'Twice a day', mode: 'online', category: 'other', bounty_amount: null, tags: null, city: null })
      .expect(201);
    expect(task.body.data).toMatchObject({ bounty_amount: null, status: 'open' });
    const missing = await test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: null });
    expect(missing.status).toBe(400);
    expect(missing.body.data.errors).toEqual([expect.objectContaining({ path: 'body.capability_id' })]);
  });

  it('keeps its meaning where null means something: an update clearing a skill price', async () => {
    const owner = await signUpHuman(test);
    const skill = (
      await test.http
        .post('/api/v1/skills/')
        .set(owner.headers)
        .send({ name: 'Tutoring', description: 'Maths', category: 'education', ut_price: '20.00' })
        .expect(201)
    ).body.data;
    expect(skill.ut_price).toBe('20.00');
    const cleared = await test.http.put(`/api/v1/skills/${skill.id}`).set(owner.headers).send({ ut_price: null }).expect(200);
    expect(cleared.body.data.ut_price).toBeNull();
  });
});

describe('the words of a validation error', () => {
  it('say what to send, not what the validator expected', async () => {
    const publisher = await signUpHuman(test);
    const refused = await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ title: '', description: 'x'.repeat(20_001), mode: 'underwater', category: 'design', delivery_hours: 1.5, tags: 'one', colour: 'blue' })
      .expect(400);
    const byPath = Object.fromEntries((refused.body.data.errors as { path: string; message: string }[]).map((error) => [error.path, error.message]));
    expect(byPath).toMatchObject({
      'body.title': 'must not be empty',
      'body.description': expect.stringMatching(/^must be at most \d+ characters$/),
      'body.mode': 'must be one of: online, offline',
      'body.delivery_hours': 'must be a whole number',
      'body.tags': 'must be a list (a JSON array)',
      body: 'has a field this request does not take: colour',
    });
    const skill = await test.http.post('/api/v1/skills/').set(publisher.headers).send({ name: 'x', description: 'y', category: 'astrology' }).expect(400);
    expect(skill.body.data.errors).toEqual([{ path: 'body.category', message: expect.stringMatching(/^must be one of: tech_dev, design, .*, other$/) }]);
    // A query's empty choice (role= means either) is named, not left blank after a comma.
    const role = await test.http.get('/api/v1/transactions?role=owner').set(publisher.headers).expect(400);
    expect(role.body.data.errors).toEqual([{ path: 'query.role', message: 'must be one of: buyer, seller, ""' }]);
  });
});
