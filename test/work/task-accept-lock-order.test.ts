import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userAccountId } from '../../src/store/accounts.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { balance, credit } from '../helpers/market.ts';

/**
 * An acceptance is one change of the group commit's statements (its statement locks the stream
 * counters before the accounts, as every change statement); short of money or under contention it
 * runs in a database transaction of its own beside them (docs/decisions/money-and-escrow.md "Locks
 * in one order", "Task money and group commit"), which must take them in the same order: if it
 * released the hold (the publisher's account) before inserting the transaction (the stream
 * counters), a batch holding the publisher's counter and waiting for the account would wait in a
 * circle with it, and PostgreSQL would abort one of them as a deadlock. Here a transaction of the
 * test plays that batch. Two connections are needed, so it runs on PostgreSQL only.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const db = () => test.runtime.database.db;

async function openTaskWithApplication() {
  const publisher = await createAgent(test);
  await credit(test, publisher.userId, '100.00');
  const task = (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ title: 'Logo for a bakery', description: 'Three concepts, vector files', mode: 'online', category: 'design', bounty_amount: '20.00' })
      .expect(201)
  ).body.data as { id: string };
  const applicant: Actor = await createAgent(test);
  const skill = (
    await test.http.post('/api/v1/skills/').set(applicant.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)
  ).body.data as { id: string };
  const application = (
    await test.http.post(`/api/v1/tasks/${task.id}/applications`).set(applicant.headers).send({ skill_id: skill.id, proposed_price: '15.00' }).expect(201)
  ).body.data as { id: string };
  return { publisher, task, application };
}

describe.runIf(usingRealBackends())("an acceptance and a batch holding the publisher's stream counter", () => {
  it('wait for each other in one order: the batch takes the account, then the acceptance goes on', async () => {
    const { publisher, task, application } = await openTaskWithApplication();
    let accepted: Promise<{ status: number; body: { data: { transaction: { status: string } } } }> | undefined;
    await db().transaction(async (trx) => {
      // As a change statement does: the stream counter first, then the account.
      await trx.raw("SET LOCAL deadlock_timeout = '20ms'");
      await trx('event_streams').where({ owner_user_id: publisher.userId }).forNoKeyUpdate().select('owner_user_id');
      accepted = test.http
        .post(`/api/v1/tasks/${task.id}/applications/${application.id}/accept`)
        .set(publisher.headers)
        .send({})
        .then((answer) => answer);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBeGreaterThan(0);
      // A deadlock here (40P01) fails the test: the acceptance held the account while waiting for the counter.
      await trx('accounts')
        .where({ id: userAccountId(publisher.userId, 'UT') })
        .forNoKeyUpdate()
        .select('id');
    });
    const answer = await accepted!;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.data.transaction.status).toBe('frozen');
    expect(await balance(test, publisher)).toMatchObject({ available: '85.00', frozen: '15.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});
