import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/callbacks/webhook-signing.ts';
import { limits } from '../../src/limits.ts';
import { webhookEventTypes } from '../../src/domain/webhooks.ts';
import { taskStreamEvent } from '../../src/schemas/tasks.ts';
import { streamEvent } from '../../rest/routes/streams.ts';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { type Received, startReceiver } from '../helpers/receiver.ts';
import { act, agentMarket, buy, credit } from '../helpers/market.ts';

/**
 * Webhooks (docs/webhooks.md) through the public API, delivered to a real receiver on loopback:
 * what arrives, in what order, signed how, and what happens when the receiver fails. The
 * operator setting CALLBACK_ALLOW_PRIVATE lets deliveries reach 127.0.0.1, as for callbacks.
 */
let test: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await test.close();
});

const subscribe = async (actor: Actor, body: Record<string, unknown>) =>
  (await test.http.post('/api/v1/webhooks').set(actor.headers).send(body).expect(201)).body.data as { id: string; secret: string };
const deliver = () => test.runtime.engine.webhooks.runOnce();
const bodies = (path: string) => receiver.at(path).map((request) => JSON.parse(request.body) as { type: string; timestamp: string; data: Record<string, any> });
const headersOf = (request: Received) => Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, String(value)]));

describe("a transaction's life at a webhook", () => {
  it('arrives whole and in order, each delivery signed as Standard Webhooks libraries verify', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const hook = await subscribe(buyer, { url: receiver.url('/life'), event_types: ['transaction.*'] });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: { answer: 42 } }).expect(200);
    await act(test, buyer, id, 'confirm').expect(200);
    await deliver();

    expect(bodies('/life').map((body) => body.type)).toEqual([
      'transaction.pending_freeze',
      'transaction.frozen',
      'transaction.accepted',
      'transaction.delivered',
      'transaction.settled',
    ]);
    expect(bodies('/life').map((body) => body.data.transaction_id)).toEqual(Array(5).fill(id));
    // Each body is what the OpenAPI document's webhooks section says (the same schema it is built from).
    for (const body of bodies('/life')) expect(() => streamEvent.parse(body.data)).not.toThrow();
    // The official library of the specification (another author's code) accepts every delivery.
    const library = new Webhook(hook.secret);
    for (const request of receiver.at('/life')) {
      expect(library.verify(request.body, headersOf(request))).toMatchObject({ data: { transaction_id: id } });
      expect(verifyWebhook(hook.secret, headersOf(request), request.body, Math.floor(Date.now() / 1000))).toBe(true);
      expect(request.headers['content-type']).toBe('application/json');
    }
    // A tampered body or another secret does not verify.
    const [first] = receiver.at('/life');
    expect(() => library.verify(first!.body.replace('pending_freeze', 'settled'), headersOf(first!))).toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(first!.body, headersOf(first!))).toThrow();
    // The ids differ per delivery: a receiver drops repeats by webhook-id.
    expect(new Set(receiver.at('/life').map((request) => request.headers['webhook-id'])).size).toBe(5);
  });

  it("carries a dispute, to the seller's webhook too, and only the kinds each asked for", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    await subscribe(seller, { url: receiver.url('/seller'), event_types: ['*'] });
    await subscribe(buyer, { url: receiver.url('/disputes'), event_types: ['transaction.disputed', 'transaction.refunded'] });
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, buyer, id, 'dispute', { reason: 'not what was asked' }).expect(200);
    await deliver();
    expect(bodies('/seller').map((body) => body.type)).toEqual([
      'transaction.pending_freeze',
      'transaction.frozen',
      'transaction.accepted',
      'transaction.delivered',
      'transaction.disputed',
    ]);
    expect(bodies('/disputes').map((body) => body.type)).toEqual(['transaction.disputed']);
    // Neither party's webhook learns the other's position in their stream of all their transactions.
    for (const body of [...bodies('/seller'), ...bodies('/disputes')]) {
      expect(body.data).not.toHaveProperty('buyer_sequence');
      expect(body.data).not.toHaveProperty('seller_sequence');
    }
  });
});

describe('a receiver that fails', () => {
  it('gets every event once it answers, after retries with the same delivery id, still in order', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const hook = await subscribe(buyer, { url: receiver.url('/flaky', [500, 500, 500, 200]), event_types: ['transaction.*'] });
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    for (let round = 0; round < 6; round++) {
      await deliver();
      test.clock.advanceMs(limits.webhookRetryDelayMaxMs);
    }
    await deliver();
    const requests = receiver.at('/flaky');
    // Three refusals of the first event, then the three events in order, each accepted once.
    expect(requests.map((request) => JSON.parse(request.body).type)).toEqual([
      'transaction.pending_freeze',
      'transaction.pending_freeze',
      'transaction.pending_freeze',
      'transaction.pending_freeze',
      'transaction.frozen',
      'transaction.accepted',
    ]);
    expect(new Set(requests.slice(0, 4).map((request) => request.headers['webhook-id'])).size).toBe(1);
    const listed = (await test.http.get(`/api/v1/webhooks/${hook.id}/deliveries`).set(buyer.headers).expect(200)).body.data;
    const first = listed.items.find((item: { event_type: string }) => item.event_type === 'transaction.pending_freeze');
    expect(first).toMatchObject({ status: 'delivered', attempts: 4, last_status_code: 200 });
    expect(first.attempt_log.map((attempt: { status_code: number }) => attempt.status_code)).toEqual([500, 500, 500, 200]);
    expect(first.attempt_log[0].error).toContain('receiver trouble');
  });

  it('marks deliveries failed once the window closes, visible to the owner, and keeps the API answering', async () => {
    const buyer = await createAgent(test);
    await credit(test, buyer.userId, '10.00');
    const hook = await subscribe(buyer, { url: receiver.url('/down', [503]), event_types: ['task.*'] });
    await test.http.post('/api/v1/tasks/').set(buyer.headers).send({ title: 'Index a book', description: 'Two hundred pages', mode: 'online' }).expect(201);
    let rounds = 0;
    for (
      let elapsedMs = 0;
      elapsedMs <= limits.webhookDeliveryWindowMs + limits.webhookRetryDelayMaxMs;
      elapsedMs += limits.webhookRetryDelayMaxMs / 2, rounds++
    ) {
      await deliver();
      test.clock.advanceMs(limits.webhookRetryDelayMaxMs / 2);
      await test.http.get('/api/v1/webhooks').set(buyer.headers).expect(200);
    }
    await deliver();
    const details = (await test.http.get(`/api/v1/webhooks/${hook.id}`).set(buyer.headers).expect(200)).body.data;
    expect(details.deliveries).toEqual({ pending: 0, delivered: 0, failed: 1 });
    const failed = (await test.http.get(`/api/v1/webhooks/${hook.id}/deliveries?status=failed`).set(buyer.headers).expect(200)).body.data.items;
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ event_type: 'task.published', status: 'failed', last_status_code: 503, next_attempt_at: null });
    // Tried again and again, but fewer times than rounds: the backoff spaced the attempts out.
    expect(failed[0].attempts).toBeGreaterThan(5);
    expect(failed[0].attempts).toBeLessThan(rounds);
    expect(receiver.at('/down')).toHaveLength(failed[0].attempts);
  });
});

describe('a subscription whose queue is full', () => {
  it(`records new events as failed (queue_full) once ${limits.webhookPendingPerSubscriptionMax} wait, instead of growing without bound`, async () => {
    const owner = await createAgent(test);
    const hook = await subscribe(owner, { url: receiver.url('/full', [503]), event_types: ['task.*'] });
    const { db } = test.runtime.engine.dependencies;
    // As if the receiver had been down while that many events came: waiting, due much later.
    await db.raw(
      `INSERT INTO webhook_deliveries (id, subscription_id, source, source_event_id, ordering_key, event_type, body, status, next_attempt_at, created_at)
       SELECT gen_random_uuid(), ?, 'ping', 0, 'ping:' || n, 'webhook.ping', '{}'::jsonb, 'pending', ?::timestamptz, ?::timestamptz FROM generate_series(1, ?) AS n`,
      [
        hook.id,
        new Date(test.runtime.engine.dependencies.now().getTime() + 86_400_000),
        test.runtime.engine.dependencies.now(),
        limits.webhookPendingPerSubscriptionMax,
      ],
    );
    await test.http.post('/api/v1/tasks/').set(owner.headers).send({ title: 'Sort receipts', description: 'A box of them', mode: 'online' }).expect(201);
    await deliver();
    const failed = (await test.http.get(`/api/v1/webhooks/${hook.id}/deliveries?status=failed`).set(owner.headers).expect(200)).body.data.items;
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ event_type: 'task.published', status: 'failed', attempts: 0 });
    expect(failed[0].last_error).toMatch(/^queue_full/);
    expect(receiver.at('/full')).toEqual([]);
    expect((await test.http.get(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(200)).body.data.deliveries).toEqual({
      pending: limits.webhookPendingPerSubscriptionMax,
      delivered: 0,
      failed: 1,
    });
    await db('webhook_deliveries').where({ subscription_id: hook.id }).del();
  });
});

describe('what a subscription hears', () => {
  it("hears its owner's task and application moves, as the task stream carries them", async () => {
    const publisher = await createAgent(test);
    const applicant = await createAgent(test);
    await subscribe(publisher, { url: receiver.url('/market'), event_types: ['task.*', 'application.*'] });
    const task = (
      await test.http.post('/api/v1/tasks/').set(publisher.headers).send({ title: 'Subtitle a video', description: 'Ten minutes', mode: 'online' }).expect(201)
    ).body.data;
    const skill = (
      await test.http
        .post('/api/v1/skills/')
        .set(applicant.headers)
        .send({ name: 'Subtitles', description: 'Timed subtitles', category: 'translation' })
        .expect(201)
    ).body.data;
    await test.http.post(`/api/v1/tasks/${task.id}/applications`).set(applicant.headers).send({ skill_id: skill.id }).expect(201);
    await test.http.post(`/api/v1/tasks/${task.id}/close`).set(publisher.headers).send({}).expect(200);
    await deliver();
    expect(bodies('/market').map((body) => [body.type, body.data.task_id])).toEqual([
      ['task.published', task.id],
      ['application.submitted', task.id],
      ['task.closed', task.id],
      ['application.rejected', task.id],
    ]);
    for (const body of bodies('/market')) expect(() => taskStreamEvent.parse(body.data)).not.toThrow();
  });

  it("keeps to its filter and its space: one transaction, and never the owner's other space", async () => {
    const person = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, person.userId);
    const asAgent: Actor = { userId: person.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': person.userId } };
    await credit(test, person.userId, '50.00');
    const { seller, capability } = await agentMarket(test);
    const [one, other] = [await buy(test, asAgent, capability.id), await buy(test, asAgent, capability.id)];
    await subscribe(asAgent, { url: receiver.url('/filtered'), event_types: ['*'], transaction_id: other.id });
    await subscribe(person, { url: receiver.url('/human-side'), event_types: ['*'] });
    await act(test, asAgent, one.id, 'freeze').expect(200);
    await act(test, asAgent, other.id, 'freeze').expect(200);
    await act(test, seller, other.id, 'accept').expect(200);
    await deliver();
    expect(bodies('/filtered').map((body) => [body.type, body.data.transaction_id])).toEqual([
      ['transaction.frozen', other.id],
      ['transaction.accepted', other.id],
    ]);
    expect(receiver.at('/human-side')).toEqual([]);
  });

  it('answers a ping with a signed webhook.ping, and after a rotation signs with both secrets for a day', async () => {
    const owner = await createAgent(test);
    const hook = await subscribe(owner, { url: receiver.url('/ping'), event_types: ['task.*'] });
    expect((await test.http.post(`/api/v1/webhooks/${hook.id}/ping`).set(owner.headers).expect(201)).body.data).toMatchObject({
      event_type: 'webhook.ping',
      status: 'pending',
    });
    await deliver();
    const [ping] = receiver.at('/ping');
    expect(JSON.parse(ping!.body)).toMatchObject({ type: 'webhook.ping', data: { webhook_id: hook.id } });
    const nowSeconds = () => Math.floor(test.clock.now.getTime() / 1000);
    expect(verifyWebhook(hook.secret, headersOf(ping!), ping!.body, nowSeconds())).toBe(true);
    const rotated = (await test.http.post(`/api/v1/webhooks/${hook.id}/rotate-secret`).set(owner.headers).expect(200)).body.data;
    expect(rotated.secret).not.toBe(hook.secret);
    expect(rotated.previous_secret_expires_at).not.toBeNull();
    await test.http.post(`/api/v1/webhooks/${hook.id}/ping`).set(owner.headers).expect(201);
    await deliver();
    const afterRotation = receiver.at('/ping')[1]!;
    expect(String(afterRotation.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secret of [hook.secret, rotated.secret]) expect(verifyWebhook(secret, headersOf(afterRotation), afterRotation.body, nowSeconds())).toBe(true);
    test.clock.advanceMs(limits.webhookPreviousSecretValidMs + 1);
    await test.http.post(`/api/v1/webhooks/${hook.id}/ping`).set(owner.headers).expect(201);
    await deliver();
    const later = receiver.at('/ping')[2]!;
    expect(verifyWebhook(rotated.secret, headersOf(later), later.body, nowSeconds())).toBe(true);
    expect(verifyWebhook(hook.secret, headersOf(later), later.body, nowSeconds())).toBe(false);
    // Old timestamps are refused by the check a receiver runs.
    expect(verifyWebhook(rotated.secret, headersOf(later), later.body, nowSeconds() + 400)).toBe(false);
  });
});

describe('managing webhooks', () => {
  it('documents every kind of delivery in the OpenAPI webhooks section, with the signature headers', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    expect(Object.keys(document.webhooks).sort()).toEqual([...webhookEventTypes].sort());
    const settled = document.webhooks['transaction.settled'].post;
    expect(settled.parameters.map((parameter: { name: string }) => parameter.name)).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    expect(JSON.stringify(settled.requestBody.content['application/json'].schema)).toContain('TransactionEvent');
    expect(JSON.stringify(document.webhooks['application.accepted'].post.requestBody)).toContain('TaskEvent');
  });

  it('shows the secret once, lists and reads without it, and stops sending once deleted', async () => {
    const owner = await createAgent(test);
    const hook = await subscribe(owner, { url: receiver.url('/gone'), event_types: ['task.published'], description: 'my tasks' });
    const read = (await test.http.get(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(200)).body.data;
    expect(read).toMatchObject({ id: hook.id, event_types: ['task.published'], description: 'my tasks', deliveries: { pending: 0, delivered: 0, failed: 0 } });
    expect(JSON.stringify(read)).not.toContain(hook.secret);
    const listed = (await test.http.get('/api/v1/webhooks').set(owner.headers).expect(200)).body.data;
    expect(listed.items.map((item: { id: string }) => item.id)).toEqual([hook.id]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    await test.http.delete(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(200);
    expect((await test.http.get(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(404)).body.code).toBe(4040);
    await test.http.post('/api/v1/tasks/').set(owner.headers).send({ title: 'Name a cat', description: 'One name', mode: 'online' }).expect(201);
    await deliver();
    expect(receiver.at('/gone')).toEqual([]);
  });

  it('refuses bad input with 4000 naming the field, and more than the limit with 4092', async () => {
    const owner = await createAgent(test);
    const good = { url: receiver.url('/limit'), event_types: ['*'] };
    for (const [body, field] of [
      [{ event_types: ['*'] }, 'body.url'],
      [{ ...good, url: 'ftp://example.com/hook' }, 'body.url'],
      [{ ...good, url: 'not a url' }, 'body.url'],
      [{ ...good, event_types: [] }, 'body.event_types'],
      [{ ...good, event_types: ['transaction.exploded'] }, 'body.event_types.0'],
      [{ ...good, event_types: ['*', '*'] }, 'body.event_types'],
      [{ ...good, transaction_id: 'nope' }, 'body.transaction_id'],
      [{ ...good, secret: 'mine' }, 'body'],
      [{ ...good, description: '' }, 'body.description'],
    ] as const) {
      const answer = (await test.http.post('/api/v1/webhooks').set(owner.headers).send(body).expect(400)).body;
      expect(answer.code).toBe(4000);
      expect(answer.data.errors.map((error: { path: string }) => error.path)).toContain(field);
    }
    for (let index = 0; index < limits.webhookSubscriptionsPerUserMax; index++) await subscribe(owner, good);
    expect((await test.http.post('/api/v1/webhooks').set(owner.headers).send(good).expect(409)).body).toMatchObject({
      code: 4092,
      data: { webhooks_max: limits.webhookSubscriptionsPerUserMax },
    });
    expect((await test.http.get(`/api/v1/webhooks/${randomUUID()}/deliveries`).set(owner.headers).expect(404)).body.code).toBe(4040);
    expect((await test.http.get('/api/v1/webhooks/not-a-uuid').set(owner.headers).expect(400)).body.code).toBe(4000);
    expect((await test.http.get('/api/v1/webhooks/x/deliveries?status=lost').set(owner.headers).expect(400)).body.code).toBe(4000);
  });

  it("hides a webhook from everyone but its owner in its space: another user, the owner's other credentials, no or mixed credentials", async () => {
    const person = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, person.userId);
    const owner: Actor = { userId: person.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': person.userId } };
    const stranger = await createAgent(test);
    const hook = await subscribe(owner, { url: receiver.url('/private'), event_types: ['*'] });
    for (const [method, path] of [
      ['get', ''],
      ['delete', ''],
      ['get', '/deliveries'],
      ['post', '/ping'],
      ['post', '/rotate-secret'],
    ] as const) {
      const url = `/api/v1/webhooks/${hook.id}${path}`;
      expect((await test.http[method](url).set(stranger.headers).expect(404)).body.code).toBe(4040);
      expect((await test.http[method](url).set(person.headers).expect(404)).body.code).toBe(4040);
      expect((await test.http[method](url).expect(401)).body.code).toBe(4010);
      expect(
        (
          await test.http[method](url)
            .set({ ...owner.headers, ...person.headers })
            .expect(400)
        ).body.code,
      ).toBe(4011);
    }
    expect((await test.http.get('/api/v1/webhooks').set(stranger.headers).expect(200)).body.data.items).toEqual([]);
    expect((await test.http.get('/api/v1/webhooks').set(person.headers).expect(200)).body.data.items).toEqual([]);
    expect((await test.http.get(`/api/v1/webhooks/${hook.id}`).set(owner.headers).expect(200)).body.data.id).toBe(hook.id);
  });
});

describe('a receiver at a private address', () => {
  it('is refused by default, failing at once with the attempt saying which setting allows it', async () => {
    const strict = await startTestApp();
    try {
      const owner = await createAgent(strict);
      const hook = (
        await strict.http
          .post('/api/v1/webhooks')
          .set(owner.headers)
          .send({ url: receiver.url('/internal'), event_types: ['*'] })
          .expect(201)
      ).body.data;
      await strict.http.post(`/api/v1/webhooks/${hook.id}/ping`).set(owner.headers).expect(201);
      await strict.runtime.engine.webhooks.runOnce();
      const [delivery] = (await strict.http.get(`/api/v1/webhooks/${hook.id}/deliveries`).set(owner.headers).expect(200)).body.data.items;
      // No retry can change the guard's answer: failed at the first attempt (test/deliveries/webhook-permanent-failures.test.ts).
      expect(delivery).toMatchObject({ status: 'failed', attempts: 1, next_attempt_at: null });
      expect(delivery.last_error).toContain('CALLBACK_ALLOW_PRIVATE');
      expect(receiver.at('/internal')).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});

describe('demand matches', () => {
  const translation = {
    title: 'English to Chinese translation',
    description: 'Professional translation of documents from English into Chinese',
    category: 'translation',
    capability_type: 'service',
    pricing_model: 'per_use',
    price_ut: '30.00',
    callback_url: 'https://seller.example/callback',
  };

  it("tells a demand's owner once when a capability offered matches it, and nobody whose demand it does not match", async () => {
    const [requester, unrelated, seller] = [await createAgent(test), await createAgent(test), await createAgent(test)];
    const demand = (
      await test.http.post('/api/v1/demands').set(requester.headers).send({ description: 'Translate our English manual into Chinese' }).expect(201)
    ).body.data;
    await test.http.post('/api/v1/demands').set(unrelated.headers).send({ description: 'Repair a vintage bicycle gearbox' }).expect(201);
    await subscribe(requester, { url: receiver.url('/demand-match'), event_types: ['demand.*'] });
    await subscribe(unrelated, { url: receiver.url('/demand-unrelated'), event_types: ['*'] });
    const capability = (await test.http.post('/api/v1/capabilities').set(seller.headers).send(translation).expect(201)).body.data;
    await test.runtime.engine.autoAcceptJobs.idle();
    // Offered again (withdrawn, then back): the same match is not told twice.
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ available: false }).expect(200);
    await test.http.put(`/api/v1/capabilities/${capability.id}`).set(seller.headers).send({ available: true }).expect(200);
    await test.runtime.engine.autoAcceptJobs.idle();
    await deliver();

    const told = bodies('/demand-match');
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      type: 'demand.matched',
      data: {
        type: 'demand.matched',
        demand_id: demand.id,
        capability: { id: capability.id, title: translation.title, price: '30.00', currency: 'UT', pricing_model: 'per_use' },
      },
    });
    expect(told[0]!.data.score).toBeGreaterThanOrEqual(0.5);
    expect(bodies('/demand-unrelated')).toEqual([]);
  });

  it("stays in its space: a person's demand hears nothing of an agent's capability", async () => {
    const person = await signUpHuman(test);
    await test.http.post('/api/v1/demands').set(person.headers).send({ description: 'Translate our English manual into Chinese' }).expect(201);
    await subscribe(person, { url: receiver.url('/demand-human'), event_types: ['demand.matched'] });
    const seller = await createAgent(test);
    await test.http.post('/api/v1/capabilities').set(seller.headers).send(translation).expect(201);
    await test.runtime.engine.autoAcceptJobs.idle();
    await deliver();
    expect(bodies('/demand-human')).toEqual([]);
  });
});
