import { afterEach, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/engine/index.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * Fair sending (issue 28, point 6; docs/webhooks.md "Delivery"): one owner's receivers that never
 * answer hold at most that owner's share of an instance's sends, so another owner's delivery goes
 * out while theirs are still pending; due deliveries are taken owner by owner in turn, not oldest
 * first; and two instances sending from one database still send each delivery once. Each test has
 * an app of its own, so that no other test's deliveries take part in its claims.
 */
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closing.length > 0) await closing.pop()!();
});
async function setUp() {
  const test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  const receiver = await startReceiver();
  closing.push(
    () => test.close(),
    () => receiver.close(),
  );
  return { test, receiver };
}

const subscribe = async (test: TestApp, actor: Actor, url: string) =>
  (
    await test.http
      .post('/api/v1/webhooks')
      .set(actor.headers)
      .send({ url, event_types: ['task.*'] })
      .expect(201)
  ).body.data as { id: string };
const ping = async (test: TestApp, actor: Actor, hookId: string) =>
  (await test.http.post(`/api/v1/webhooks/${hookId}/ping`).set(actor.headers).expect(201)).body.data as { delivery_id: string };
const deliveriesOf = async (test: TestApp, actor: Actor, hookId: string) =>
  (await test.http.get(`/api/v1/webhooks/${hookId}/deliveries?page_size=100`).set(actor.headers).expect(200)).body.data.items as {
    id: string;
    status: string;
    attempts: number;
    attempt_log: unknown[];
  }[];

/** Waits for something the running worker is to make true; the bound only keeps a broken build from hanging the run. */
async function until(what: string, condition: () => boolean | Promise<boolean>) {
  for (let waited = 0; !(await condition()); waited += 20) {
    if (waited > 60_000) throw new Error(`still waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('one owner whose receivers never answer', () => {
  it("holds only its owner's share of the sends, and another owner's ping is delivered while all of its own are pending", async () => {
    const { test, receiver } = await setUp();
    const hanging = await startCallbackServer();
    closing.push(() => hanging.close());
    const [flooder, other] = [await createAgent(test), await createAgent(test)];
    // The finding: 10 webhooks at a listener that never answers, 120 pings.
    const hooks = [];
    for (let index = 0; index < 10; index++) hooks.push(await subscribe(test, flooder, hanging.url('/hang')));
    for (let index = 0; index < 120; index++) await ping(test, flooder, hooks[index % hooks.length]!.id);
    // The other owner's ping is newer than every one of the flood's: oldest first, it would come last.
    test.clock.advanceMs(1);
    const quiet = await subscribe(test, other, receiver.url('/quiet'));
    await ping(test, other, quiet.id);

    test.runtime.engine.webhooks.start();
    closing.push(async () => {
      test.runtime.engine.webhooks.stop();
      await hanging.close();
      await test.runtime.engine.webhooks.idle();
    });
    await until("the other owner's ping", async () => (await deliveriesOf(test, other, quiet.id))[0]!.status === 'delivered');
    await until('the flood to take its share', () => hanging.received.length >= limits.webhookSendsInFlightPerOwnerMax);

    expect(receiver.at('/quiet')).toHaveLength(1);
    expect((await deliveriesOf(test, other, quiet.id))[0]).toMatchObject({ status: 'delivered', attempts: 1 });
    // Every one of the flood's 120 is still pending, none of its sends has ended: the other owner
    // did not wait for the hanging receiver to time out.
    const flood = (await Promise.all(hooks.map((hook) => deliveriesOf(test, flooder, hook.id)))).flat();
    expect(flood).toHaveLength(120);
    expect(flood.filter((delivery) => delivery.status !== 'pending' || delivery.attempt_log.length > 0)).toEqual([]);
    // The flood holds its owner's share of this instance's sends, no more.
    expect(limits.webhookSendsInFlightPerOwnerMax).toBeLessThan(limits.webhookSendsInFlightMax / 2);
    expect(hanging.received).toHaveLength(limits.webhookSendsInFlightPerOwnerMax);
  }, 90_000);
});

describe('the order deliveries are taken in', () => {
  it("takes two owners' due deliveries in turn, not the older owner's first", async () => {
    const { test, receiver } = await setUp();
    const [older, newer] = [await createAgent(test), await createAgent(test)];
    // Enough webhooks that neither the per-subscription nor the per-owner bound, but only the
    // turns, can keep the older owner from filling a whole claim.
    const batch = limits.webhookClaimBatchSize;
    expect(limits.webhookSendsInFlightPerOwnerMax).toBeGreaterThanOrEqual(batch);
    const hooksPerOwner = Math.ceil(batch / limits.webhookSendsInFlightPerSubscriptionMax);
    const pingsPerOwner = 3 * (batch / 2);
    const pingAll = async (actor: Actor, path: string) => {
      const hooks = [];
      for (let index = 0; index < hooksPerOwner; index++) hooks.push(await subscribe(test, actor, receiver.url(path)));
      for (let index = 0; index < pingsPerOwner; index++) await ping(test, actor, hooks[index % hooks.length]!.id);
    };
    await pingAll(older, '/older');
    test.clock.advanceMs(1);
    await pingAll(newer, '/newer');

    // runOnce claims once per round and waits for the round's sends: each claim arrives as a block.
    await test.runtime.engine.webhooks.runOnce();
    const arrived = receiver.received.map((request) => request.path);
    expect(arrived).toHaveLength(2 * pingsPerOwner);
    const blocks = [];
    for (let start = 0; start < arrived.length; start += batch) {
      const block = arrived.slice(start, start + batch);
      blocks.push([block.filter((path) => path === '/older').length, block.filter((path) => path === '/newer').length]);
    }
    expect(blocks).toEqual([
      [batch / 2, batch / 2],
      [batch / 2, batch / 2],
      [batch / 2, batch / 2],
    ]);
  });
});

describe('two instances sending from one database', () => {
  it('send each delivery once, whatever the owners and however the claims interleave', async () => {
    const { test, receiver } = await setUp();
    const other = await createEngine(test.runtime.engine.dependencies);
    closing.push(() => other.close());
    const owners = [await createAgent(test), await createAgent(test), await createAgent(test)];
    const sent: string[] = [];
    const hookIds: [Actor, string][] = [];
    for (const [index, owner] of owners.entries()) {
      const hooks = [await subscribe(test, owner, receiver.url(`/twice-${index}`)), await subscribe(test, owner, receiver.url(`/twice-${index}`))];
      hookIds.push(...hooks.map((hook): [Actor, string] => [owner, hook.id]));
      for (let count = 0; count < 16; count++) sent.push((await ping(test, owner, hooks[count % 2]!.id)).delivery_id);
    }
    await Promise.all([test.runtime.engine.webhooks.runOnce(), other.webhooks.runOnce()]);
    const ids = receiver.received.map((request) => String(request.headers['webhook-id']));
    expect(ids.toSorted()).toEqual(sent.toSorted());
    const listed = (await Promise.all(hookIds.map(([owner, id]) => deliveriesOf(test, owner, id)))).flat();
    expect(listed.map((delivery) => [delivery.status, delivery.attempts])).toEqual(Array(sent.length).fill(['delivered', 1]));
  });
});
