import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * Expired means expired (issue 28, point 3; docs/tasks.md "Expiry"): past `expires_at` a task
 * takes no application, acceptance, push, selection, answer to a push or change, whether the
 * sweeper has run or not; each operation reads the deadline against the engine's clock in its own
 * database transaction. The test's clock moves past the deadline and no sweep runs until the end.
 * Also through MCP: accept_application without max_price is capped at the bounty held (point 2).
 */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
const clients: Client[] = [];

beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await server?.close();
  await test?.close();
});

const expectBooks = async () => expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
const inMinutes = (minutes: number) => new Date(test.runtime.engine.dependencies.now().getTime() + minutes * 60_000).toISOString();
const pastTheDeadline = () => test.clock.advanceMs(2 * 60_000 + 1_000);
const skillOf = async (actor: Actor) =>
  (await test.http.post('/api/v1/skills/').set(actor.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)).body.data
    .id as string;
const publish = async (publisher: Actor, body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({
        title: 'Logo for a bakery',
        description: 'Three concepts',
        mode: 'online',
        category: 'design',
        bounty_amount: '30.00',
        expires_at: inMinutes(2),
        ...body,
      })
      .expect(201)
  ).body.data as { id: string };

describe('a task past its deadline, before the sweeper runs', () => {
  it('takes no application, acceptance, push, selection, answer or change; withdrawals still work; the sweep then releases the bounty', async () => {
    const [publisher, applicant, latecomer, selected, pushed] = [
      await createAgent(test),
      await createAgent(test),
      await createAgent(test),
      await createAgent(test),
      await createAgent(test),
    ];
    await credit(test, publisher.userId, '100.00');
    const task = await publish(publisher);
    const application = (
      await test.http
        .post(`/api/v1/tasks/${task.id}/applications`)
        .set(applicant.headers)
        .send({ skill_id: await skillOf(applicant), proposed_price: '30.00' })
        .expect(201)
    ).body.data;
    const selection = (
      await test.http
        .post(`/api/v1/tasks/${task.id}/select-skill`)
        .set(publisher.headers)
        .send({ skill_id: await skillOf(selected) })
        .expect(201)
    ).body.data;
    const invitation = (
      await test.http
        .post(`/api/v1/tasks/${task.id}/push-skill`)
        .set(publisher.headers)
        .send({ skill_id: await skillOf(pushed) })
        .expect(201)
    ).body.data;
    const [lateSkill, word] = [await skillOf(latecomer), 'bakery'];
    pastTheDeadline();
    const expired = (action: string) => ({ code: 4090, data: { status: 'expired', action } });
    expect((await test.http.post(`/api/v1/tasks/${task.id}/applications`).set(latecomer.headers).send({ skill_id: lateSkill }).expect(409)).body).toMatchObject(
      expired('apply'),
    );
    expect(
      (await test.http.post(`/api/v1/tasks/${task.id}/applications/${application.id}/accept`).set(publisher.headers).send({ max_price: '30.00' }).expect(409))
        .body,
    ).toMatchObject(expired('match'));
    expect((await test.http.post(`/api/v1/tasks/${task.id}/select-skill`).set(publisher.headers).send({ skill_id: lateSkill }).expect(409)).body).toMatchObject(
      expired('select'),
    );
    expect((await test.http.post(`/api/v1/tasks/${task.id}/push-skill`).set(publisher.headers).send({ skill_id: lateSkill }).expect(409)).body).toMatchObject(
      expired('push'),
    );
    expect(
      (await test.http.post(`/api/v1/tasks/pushes/${selection.id}/respond`).set(selected.headers).send({ decision: 'accept' }).expect(409)).body,
    ).toMatchObject(expired('respond'));
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ bounty_amount: '40.00' }).expect(409)).body).toMatchObject(
      expired('update'),
    );
    expect(
      (
        await test.http
          .put(`/api/v1/tasks/${task.id}`)
          .set(publisher.headers)
          .send({ expires_at: inMinutes(60) })
          .expect(409)
      ).body,
    ).toMatchObject(expired('update'));
    // Nothing was matched or charged, and the hall no longer shows it.
    expect(
      Number(((await test.runtime.engine.dependencies.db('transactions').where({ task_id: task.id }).count('* as count')) as { count: string }[])[0]!.count),
    ).toBe(0);
    expect(await balance(test, publisher)).toMatchObject({ available: '70.00', frozen: '30.00' });
    const hall = (await test.http.get('/api/v1/tasks/hall').query({ q: word, page_size: 50 }).set(latecomer.headers).expect(200)).body.data.items;
    expect(hall.map((item: { id: string }) => item.id)).not.toContain(task.id);
    expect(
      (await test.http.get('/api/v1/tasks/hall').query({ sort: 'deadline', page_size: 50 }).set(latecomer.headers).expect(200)).body.data.items.map(
        (item: { id: string }) => item.id,
      ),
    ).not.toContain(task.id);
    // Undoing is still allowed: the applicant withdraws, the invited owner declines, the publisher takes the selection back.
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/applications/${application.id}`).set(applicant.headers).expect(200)).body.data.status).toBe(
      'withdrawn',
    );
    expect(
      (await test.http.post(`/api/v1/tasks/pushes/${invitation.id}/respond`).set(pushed.headers).send({ decision: 'decline' }).expect(200)).body.data.push
        .status,
    ).toBe('declined');
    expect((await test.http.delete(`/api/v1/tasks/${task.id}/pushes/${selection.id}`).set(publisher.headers).expect(200)).body.data.status).toBe('withdrawn');
    await test.runtime.engine.sweeper.runOnce();
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
      status: 'expired',
      bounty_held: '0.00',
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '100.00', frozen: '0.00' });
    await expectBooks();
  });

  it('a publisher may still close it, which releases the bounty at once', async () => {
    const publisher = await createAgent(test);
    await credit(test, publisher.userId, '40.00');
    const task = await publish(publisher);
    pastTheDeadline();
    expect((await test.http.post(`/api/v1/tasks/${task.id}/close`).set(publisher.headers).send({}).expect(200)).body.data).toMatchObject({
      status: 'closed',
      bounty_held: '0.00',
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '40.00', frozen: '0.00' });
    await expectBooks();
  });

  it('a draft whose deadline passed is not published with it: the deadline must be given again', async () => {
    const publisher = await createAgent(test);
    await credit(test, publisher.userId, '40.00');
    const draft = await publish(publisher, { draft: true });
    pastTheDeadline();
    const refused = (await test.http.post(`/api/v1/tasks/${draft.id}/publish-draft`).set(publisher.headers).send({ delivery_hours: 4 }).expect(400)).body;
    expect(refused).toMatchObject({ code: 4000, data: { errors: [{ path: 'body.expires_at' }] } });
    expect(await balance(test, publisher)).toMatchObject({ available: '40.00', frozen: '0.00' });
    const published = (
      await test.http
        .post(`/api/v1/tasks/${draft.id}/publish-draft`)
        .set(publisher.headers)
        .send({ delivery_hours: 4, expires_at: inMinutes(60) })
        .expect(200)
    ).body.data;
    expect(published).toMatchObject({ status: 'open', bounty_held: '30.00' });
    await expectBooks();
  });
});

describe('the same rules through MCP', () => {
  const ok = (outcome: { isError: boolean; data: Record<string, any> }) => {
    expect(outcome.isError, JSON.stringify(outcome.data)).toBe(false);
    return outcome.data;
  };
  async function clientOf(actor: Actor) {
    const client = await connectMcp(server.url, actor.headers);
    clients.push(client);
    return client;
  }

  it('accept_application without max_price is capped at the bounty held (4093 naming both amounts, nothing moves); with it, the price is paid', async () => {
    const [publisher, worker] = [await createAgent(test), await createAgent(test)];
    await credit(test, publisher.userId, '100.00');
    const [boss, hand] = [await clientOf(publisher), await clientOf(worker)];
    const task = await publish(publisher, { bounty_amount: '10.00', expires_at: inMinutes(600) });
    const applied = ok(await callTool(hand, 'apply_to_task', { task_id: task.id, skill_id: await skillOf(worker), proposed_price: '95.00' }));
    const refused = await callTool(boss, 'accept_application', { task_id: task.id, app_id: applied.application.id });
    expect(refused).toMatchObject({ isError: true, data: { code: 4093, data: { price: '95.00', max_price: '10.00', bounty_held: '10.00' } } });
    expect(await balance(test, publisher)).toMatchObject({ available: '90.00', frozen: '10.00' });
    const accepted = ok(await callTool(boss, 'accept_application', { task_id: task.id, app_id: applied.application.id, max_price: '95.00' }));
    expect(accepted.accepted.transaction).toMatchObject({ status: 'frozen', price_ut: '95.00' });
    await expectBooks();
  });

  it('apply_to_task and accept_application refuse a task past its deadline', async () => {
    const [publisher, worker, late] = [await createAgent(test), await createAgent(test), await createAgent(test)];
    await credit(test, publisher.userId, '100.00');
    const [boss, hand, other] = [await clientOf(publisher), await clientOf(worker), await clientOf(late)];
    const task = await publish(publisher);
    const applied = ok(await callTool(hand, 'apply_to_task', { task_id: task.id, skill_id: await skillOf(worker) }));
    const lateSkill = await skillOf(late);
    pastTheDeadline();
    expect(await callTool(other, 'apply_to_task', { task_id: task.id, skill_id: lateSkill })).toMatchObject({
      isError: true,
      data: { code: 4090, data: { status: 'expired', action: 'apply' } },
    });
    expect(await callTool(boss, 'accept_application', { task_id: task.id, app_id: applied.application.id })).toMatchObject({
      isError: true,
      data: { code: 4090, data: { status: 'expired', action: 'match' } },
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '70.00', frozen: '30.00' });
    await expectBooks();
  });
});
