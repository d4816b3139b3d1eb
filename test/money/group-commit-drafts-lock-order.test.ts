import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { balance, credit } from '../helpers/market.ts';

/**
 * The lock order of a draft's publish in a change statement (docs/decisions/money-and-escrow.md
 * "Task money and group commit"): claims, transaction rows, task rows, usage rows, stream counters,
 * accounts, task stream counters. The task paths still in a database transaction of their own (a
 * PATCH, an application, an acceptance) lock their task row first and the rest after it, so that
 * neither waits for the other in a circle. PostgreSQL only: two connections.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const valid = { title: 'Index a catalogue', description: 'Four hundred entries, by author.', mode: 'online', category: 'translation' };
type Answer = { status: number; body: { code: number; data: Record<string, unknown> } };
const db = () => test.runtime.engine.dependencies.db;

async function draftOf(actor: Actor): Promise<string> {
  const answer = await test.http
    .post('/api/v1/tasks/')
    .set(actor.headers)
    .send({ ...valid, draft: true, bounty_amount: '10.00' })
    .expect(201);
  return answer.body.data.id as string;
}

function publishDraft(actor: Actor, id: string) {
  return test.http
    .post(`/api/v1/tasks/${id}/publish-draft`)
    .set(actor.headers)
    .set('Idempotency-Key', randomUUID())
    .send({ delivery_hours: 7 })
    .then((answer) => answer as unknown as Answer);
}

describe.runIf(usingRealBackends())('a publish-draft and the task paths in transactions of their own', () => {
  /** A person's key with its day's usage row, its stream counters and accounts made, and a draft of 10.00. */
  async function budgetedDraft() {
    const owner = await ownedAgent(test);
    await credit(test, owner.userId, '100.00');
    await setBudget(test, owner.person, owner.apiKeyId, { daily_max: '50.00' }).expect(200);
    await test.http
      .post('/api/v1/tasks/')
      .set(owner.headers)
      .send({ ...valid, bounty_amount: '1.00' })
      .expect(201);
    return { owner, draft: await draftOf(owner) };
  }

  /** Takes, in `trx`, what a task path takes after the task row: the usage row, the counters, the account, the task counter. */
  async function lockAsATaskPath(trx: Knex.Transaction, owner: Actor & { apiKeyId: string }) {
    await trx('agent_budget_usage').where({ api_key_id: owner.apiKeyId }).forNoKeyUpdate().select('api_key_id');
    await trx('event_streams').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('owner_user_id');
    await trx('accounts').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('id');
    await trx('task_event_streams').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('owner_user_id');
  }

  it('lock order against an edit of the same draft: the task row first, so the edit takes the rest and the publish decides again', async () => {
    const { owner, draft } = await budgetedDraft();
    let answer: Promise<Answer> | undefined;
    await db().transaction(async (trx) => {
      // As a PATCH does: the task row first; then what the other task paths take after it.
      await trx.raw("SET LOCAL deadlock_timeout = '20ms'");
      await trx('tasks').where({ id: draft }).forNoKeyUpdate().select('id');
      answer = publishDraft(owner, draft);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBeGreaterThan(0);
      // A deadlock here (40P01) fails the test: the publish held one of these while waiting for the task row.
      await lockAsATaskPath(trx, owner);
      await trx('tasks').where({ id: draft }).update({ title: 'Index a catalogue, edited' });
    });
    const published = await answer!;
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(published.body.data).toMatchObject({ status: 'open', bounty_held: '10.00', title: 'Index a catalogue, edited' });
    expect(await budgetOf(test, owner.person, owner.apiKeyId)).toMatchObject({ spent_today: '11.00' });
    expect(await balance(test, owner)).toMatchObject({ available: '89.00', frozen: '11.00' });
    expect(await checkBooks(db())).toEqual([]);
  });

  it("lock order against an acceptance of another task of the publisher's: its usage row, counters and account, then the task counter", async () => {
    const { owner, draft } = await budgetedDraft();
    let answer: Promise<Answer> | undefined;
    await db().transaction(async (trx) => {
      await trx.raw("SET LOCAL deadlock_timeout = '20ms'");
      // As an acceptance does after its own task row: the usage row, the counters, the account.
      await trx('agent_budget_usage').where({ api_key_id: owner.apiKeyId }).forNoKeyUpdate().select('api_key_id');
      await trx('event_streams').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('owner_user_id');
      await trx('accounts').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('id');
      answer = publishDraft(owner, draft);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBeGreaterThan(0);
      // A deadlock here (40P01) fails the test: the publish held the task counter while it waited.
      await trx('task_event_streams').where({ owner_user_id: owner.userId }).forNoKeyUpdate().select('owner_user_id');
    });
    const published = await answer!;
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(published.body.data).toMatchObject({ status: 'open', bounty_held: '10.00' });
    expect(await balance(test, owner)).toMatchObject({ available: '89.00', frozen: '11.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});
