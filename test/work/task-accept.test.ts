import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feeOf, formatAmount } from '../../src/domain/money.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';

let test: TestApp;

beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const expectBooks = async () => expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);
const seller = (price: string) =>
  formatAmount(BigInt(Math.round(Number(price) * 100)) - feeOf(BigInt(Math.round(Number(price) * 100)), test.config.PLATFORM_FEE_BPS));

/** A publisher with a task and its bounty, and `count` applicants each applying with a skill of their own. */
async function market(
  space: 'agent' | 'human',
  bounty: string | null,
  proposals: (string | null)[],
  funds = '100.00',
  taskFields: Record<string, unknown> = {},
) {
  const actor = () => (space === 'agent' ? createAgent(test) : signUpHuman(test));
  const currency = space === 'agent' ? 'UT' : 'CNY';
  const publisher = await actor();
  await credit(test, publisher.userId, funds, currency);
  const task = (
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({
        title: 'Logo for a bakery',
        description: 'Three concepts, vector files',
        mode: 'online',
        category: 'design',
        ...(bounty ? { bounty_amount: bounty } : {}),
        ...taskFields,
      })
      .expect(201)
  ).body.data;
  const applicants: Actor[] = [];
  const applications: string[] = [];
  for (const proposal of proposals) {
    const applicant = await actor();
    const skill = (
      await test.http.post('/api/v1/skills/').set(applicant.headers).send({ name: 'Logo design', description: 'Logos', category: 'design' }).expect(201)
    ).body.data;
    const applied = (
      await test.http
        .post(`/api/v1/tasks/${task.id}/applications`)
        .set(applicant.headers)
        .send({ skill_id: skill.id, ...(proposal ? { proposed_price: proposal } : {}) })
        .expect(201)
    ).body.data;
    applicants.push(applicant);
    applications.push(applied.id);
  }
  return { publisher, task, applicants, applications, wallet: space === 'agent' ? ('ut' as const) : ('cash' as const) };
}
const accept = (actor: Actor, taskId: string, applicationId: string, body: Record<string, unknown> = {}) =>
  test.http.post(`/api/v1/tasks/${taskId}/applications/${applicationId}/accept`).set(actor.headers).send(body);
const act = (actor: Actor, transactionId: string, action: string, body: Record<string, unknown> = {}) =>
  test.http.post(`/api/v1/transactions/${transactionId}/${action}`).set(actor.headers).send(body);

describe("accepting an application: the task's money through escrow, end to end", () => {
  for (const space of ['agent', 'human'] as const) {
    it(`publish, apply, accept, deliver, confirm in the ${space} space, with exact balances at every step`, async () => {
      const { publisher, task, applicants, applications, wallet } = await market(space, '30.00', ['25.00', '28.00']);
      expect(await balance(test, publisher, wallet)).toMatchObject({ available: '70.00', frozen: '30.00' });
      const accepted = (await accept(publisher, task.id, applications[0]!).expect(200)).body.data;
      expect(accepted.task).toMatchObject({ status: 'matched', bounty_held: '0.00', transaction_id: accepted.transaction.id });
      expect(accepted.transaction).toMatchObject({
        status: 'frozen',
        price_ut: '25.00',
        buyer_user_id: publisher.userId,
        seller_user_id: applicants[0]!.userId,
        capability_id: null,
        task_id: task.id,
        transaction_type: 'task',
        currency: space === 'agent' ? 'UT' : 'CNY',
      });
      expect(accepted.rejected_applications).toBe(1);
      // The hold of 30.00 was released and 25.00 frozen for the transaction: 5.00 is back.
      expect(await balance(test, publisher, wallet)).toMatchObject({ available: '75.00', frozen: '25.00' });
      const other = (await test.http.get('/api/v1/tasks/applications/mine').set(applicants[1]!.headers).expect(200)).body.data.items[0];
      expect(other.status).toBe('rejected');
      const transactionId = accepted.transaction.id as string;
      expect((await act(applicants[0]!, transactionId, 'accept').expect(200)).body.data.status).toBe('accepted');
      expect((await act(applicants[0]!, transactionId, 'deliver', { result_payload: { files: ['logo.svg'] } }).expect(200)).body.data.status).toBe('delivered');
      expect((await act(publisher, transactionId, 'confirm').expect(200)).body.data.status).toBe('settled');
      expect(await balance(test, publisher, wallet)).toMatchObject({ available: '75.00', frozen: '0.00', total: '75.00' });
      expect(await balance(test, applicants[0]!, wallet)).toMatchObject({ available: seller('25.00'), frozen: '0.00' });
      expect((await test.http.get(`/api/v1/transactions/${transactionId}`).set(applicants[0]!.headers).expect(200)).body.data.task_id).toBe(task.id);
      // The publisher rates the skill once; the skill's quality score follows.
      const rate = (actor: Actor, body: Record<string, unknown>) => test.http.post(`/api/v1/tasks/${task.id}/rating`).set(actor.headers).send(body);
      expect((await rate(applicants[0]!, { score: 5 }).expect(403)).body.code).toBe(4030);
      for (const body of [{}, { score: 0 }, { score: 6 }, { score: 4.5 }, { score: 5, extra: true }])
        expect((await rate(publisher, body).expect(400)).body.code).toBe(4000);
      const rated = (await rate(publisher, { score: 5, comment: 'Lovely logos' }).expect(201)).body.data;
      expect(rated).toMatchObject({ task_id: task.id, score: 5, rating_count: 1, quality_score: 3.333 });
      expect((await rate(publisher, { score: 1 }).expect(409)).body.code).toBe(4092);
      const ratings = (await test.http.get(`/api/v1/skills/${rated.skill_id}/ratings`).set(applicants[1]!.headers).expect(200)).body.data;
      expect(ratings).toMatchObject({
        count: 1,
        average: 5,
        items: [{ score: 5, comment: 'Lovely logos', rater_user_id: publisher.userId, task_id: task.id }],
      });
      await expectBooks();
    });
  }

  it("gives the transaction the task's delivery_hours as its delivery period: cancelling is refused before it and frees the money after", async () => {
    const hourMs = 3_600_000;
    const { publisher, task, applicants, applications } = await market('agent', '30.00', ['25.00'], '100.00', { delivery_hours: 1 });
    const transactionId = (await accept(publisher, task.id, applications[0]!).expect(200)).body.data.transaction.id as string;
    const accepted = (await act(applicants[0]!, transactionId, 'accept').expect(200)).body.data;
    expect(new Date(accepted.delivery_deadline).getTime() - new Date(accepted.accepted_at).getTime()).toBe(hourMs);
    expect((await act(publisher, transactionId, 'cancel').expect(409)).body.data).toEqual({ status: 'accepted', action: 'cancel' });
    test.clock.advanceMs(hourMs + 1000);
    expect((await act(publisher, transactionId, 'cancel').expect(200)).body.data.status).toBe('cancelled_by_buyer');
    expect(await balance(test, publisher, 'ut')).toMatchObject({ available: '100.00', frozen: '0.00' });
    // A task without delivery_hours keeps the configured default.
    const other = await market('agent', '30.00', ['25.00']);
    const otherId = (await accept(other.publisher, other.task.id, other.applications[0]!).expect(200)).body.data.transaction.id as string;
    const otherAccepted = (await act(other.applicants[0]!, otherId, 'accept').expect(200)).body.data;
    const defaultMs = test.config.DELIVERY_DEADLINE_HOURS * hourMs;
    expect(new Date(otherAccepted.delivery_deadline).getTime() - new Date(otherAccepted.accepted_at).getTime()).toBe(defaultMs);
    await expectBooks();
  });

  it('prices an offer per unit at unit price × quantity, not at the bounty, and refuses a product past the largest amount', async () => {
    const { publisher, task, applicants } = await market('agent', '10.00', []);
    const worker = await createAgent(test);
    applicants.push(worker);
    const skill = (await test.http.post('/api/v1/skills/').set(worker.headers).send({ name: 'Logos', description: 'Logos', category: 'design' }).expect(201))
      .body.data;
    const applied = (
      await test.http
        .post(`/api/v1/tasks/${task.id}/applications`)
        .set(worker.headers)
        .send({ skill_id: skill.id, proposed_unit_price: '2.00', proposed_quantity: 3 })
        .expect(201)
    ).body.data;
    expect(applied).toMatchObject({ proposed_price: '6.00', proposed_unit_price: '2.00', proposed_quantity: 3 });
    const accepted = (await accept(publisher, task.id, applied.id).expect(200)).body.data;
    expect(accepted.transaction.price_ut).toBe('6.00');
    expect(await balance(test, publisher, 'ut')).toMatchObject({ available: '94.00', frozen: '6.00' });
    const other = await market('agent', '10.00', []);
    const huge = await test.http
      .post(`/api/v1/tasks/${other.task.id}/applications`)
      .set(worker.headers)
      .send({ skill_id: skill.id, proposed_unit_price: '9000000000.00', proposed_quantity: 1000000 });
    expect(huge.status).toBe(400);
    expect(huge.body.data.errors).toEqual([expect.objectContaining({ path: 'body.proposed_quantity' })]);
    await expectBooks();
  });

  it('withdraws the pending applications of a deleted skill: they cannot be accepted, no money moves, and they stop counting against the caps', async () => {
    const { publisher, task, applicants, applications } = await market('agent', '30.00', ['25.00']);
    const worker = applicants[0]!;
    const application = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).expect(200)).body.data.items[0];
    const newSkill = async (name: string) =>
      (await test.http.post('/api/v1/skills/').set(worker.headers).send({ name, description: 'Logos', category: 'design' }).expect(201)).body.data.id as string;
    // A second skill fills the worker's two places on this task.
    await test.http
      .post(`/api/v1/tasks/${task.id}/applications`)
      .set(worker.headers)
      .send({ skill_id: await newSkill('Icons') })
      .expect(201);
    await test.http
      .post(`/api/v1/tasks/${task.id}/applications`)
      .set(worker.headers)
      .send({ skill_id: await newSkill('Badges') })
      .expect(409);
    await test.http.delete(`/api/v1/skills/${application.skill_id}`).set(worker.headers).expect(200);
    const mine = (await test.http.get('/api/v1/tasks/applications/mine').set(worker.headers).query({ page_size: 100 }).expect(200)).body.data.items;
    expect(mine.find((item: { id: string }) => item.id === applications[0])).toMatchObject({ status: 'withdrawn' });
    const refused = await accept(publisher, task.id, applications[0]!).expect(409);
    expect(refused.body).toMatchObject({ code: 4090, data: { status: 'withdrawn', action: 'accept' } });
    await test.http
      .post(`/api/v1/tasks/${task.id}/applications`)
      .set(worker.headers)
      .send({ skill_id: await newSkill('Posters') })
      .expect(201);
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data.status).toBe('open');
    expect(await balance(test, publisher, 'ut')).toMatchObject({ available: '70.00', frozen: '30.00' });
  });

  it("refuses a rating before the task's transaction settled", async () => {
    const { publisher, task, applications } = await market('agent', '10.00', ['10.00']);
    expect((await test.http.post(`/api/v1/tasks/${task.id}/rating`).set(publisher.headers).send({ score: 4 }).expect(409)).body).toMatchObject({
      code: 4090,
      data: { status: 'open', action: 'rate' },
    });
    await accept(publisher, task.id, applications[0]!).expect(200);
    expect((await test.http.post(`/api/v1/tasks/${task.id}/rating`).set(publisher.headers).send({ score: 4 }).expect(409)).body.data).toMatchObject({
      status: 'matched',
      transaction_status: 'frozen',
    });
  });

  it('buys at the bounty when the application proposes no price, and freezes the difference of a price above the hold when max_price allows it', async () => {
    const atBounty = await market('agent', '12.00', [null]);
    expect((await accept(atBounty.publisher, atBounty.task.id, atBounty.applications[0]!).expect(200)).body.data.transaction.price_ut).toBe('12.00');
    expect(await balance(test, atBounty.publisher)).toMatchObject({ available: '88.00', frozen: '12.00' });
    const above = await market('agent', '10.00', ['40.00']);
    expect((await accept(above.publisher, above.task.id, above.applications[0]!, { max_price: '40.00' }).expect(200)).body.data.transaction.price_ut).toBe(
      '40.00',
    );
    expect(await balance(test, above.publisher)).toMatchObject({ available: '60.00', frozen: '40.00' });
    await expectBooks();
  });

  for (const space of ['agent', 'human'] as const) {
    it(`without max_price the ceiling is the bounty held: a higher proposal is refused with 4093 naming both amounts, and nothing moves (${space} space)`, async () => {
      // The observed case (issue 28, point 2): a 10.00 bounty, an application asking 95.00, an accept with no body.
      const { publisher, task, applications, wallet } = await market(space, '10.00', ['95.00', '10.00']);
      const currency = space === 'agent' ? 'UT' : 'CNY';
      const noBody = await test.http.post(`/api/v1/tasks/${task.id}/applications/${applications[0]}/accept`).set(publisher.headers).expect(409);
      expect(noBody.body).toMatchObject({ code: 4093, data: { currency, price: '95.00', max_price: '10.00', bounty_held: '10.00' } });
      expect((await accept(publisher, task.id, applications[0]!, {}).expect(409)).body.code).toBe(4093);
      expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
        status: 'open',
        bounty_held: '10.00',
      });
      expect(await balance(test, publisher, wallet)).toMatchObject({ available: '90.00', frozen: '10.00' });
      const applied = (await test.http.get(`/api/v1/tasks/${task.id}/applications`).set(publisher.headers).expect(200)).body.data.items;
      expect(applied.map((item: { status: string }) => item.status)).toEqual(['pending', 'pending']);
      // A proposal at the bounty needs nothing more.
      expect((await accept(publisher, task.id, applications[1]!).expect(200)).body.data.transaction.price_ut).toBe('10.00');
      await expectBooks();
    });
  }

  it('a task without a bounty holds nothing: a proposed price needs max_price', async () => {
    const { publisher, task, applications } = await market('agent', null, ['7.00']);
    expect((await accept(publisher, task.id, applications[0]!).expect(409)).body).toMatchObject({
      code: 4093,
      data: { price: '7.00', max_price: '0.00', bounty_held: '0.00' },
    });
    expect((await accept(publisher, task.id, applications[0]!, { max_price: '7.00' }).expect(200)).body.data.transaction.price_ut).toBe('7.00');
    await expectBooks();
  });

  it('refuses a price the hold and the balance cannot cover (4020), or above max_price (4093), changing nothing', async () => {
    const { publisher, task, applications } = await market('agent', '10.00', ['150.00', '20.00'], '50.00');
    const short = await accept(publisher, task.id, applications[0]!, { max_price: '150.00' }).expect(402);
    expect(short.body).toMatchObject({ code: 4020, data: { currency: 'UT', available: '50.00', required: '150.00' } });
    const ceiling = await accept(publisher, task.id, applications[1]!, { max_price: '15.00' }).expect(409);
    expect(ceiling.body).toMatchObject({ code: 4093, data: { price: '20.00', max_price: '15.00' } });
    expect((await test.http.get(`/api/v1/tasks/${task.id}`).set(publisher.headers).expect(200)).body.data).toMatchObject({
      status: 'open',
      bounty_held: '10.00',
    });
    expect(await balance(test, publisher)).toMatchObject({ available: '40.00', frozen: '10.00' });
    expect((await accept(publisher, task.id, applications[1]!, { max_price: '20.00' }).expect(200)).body.data.transaction.price_ut).toBe('20.00');
    await expectBooks();
  });

  it('accepts once: another accept, a withdrawn application, no price to agree on, the applicant or a stranger are refused', async () => {
    const { publisher, task, applicants, applications } = await market('agent', '10.00', ['8.00', '9.00']);
    const stranger = await createAgent(test);
    expect((await accept(applicants[0]!, task.id, applications[0]!).expect(403)).body.code).toBe(4030);
    expect((await accept(stranger, task.id, applications[0]!).expect(404)).body.code).toBe(4040);
    await accept(publisher, task.id, applications[0]!).expect(200);
    expect((await accept(publisher, task.id, applications[0]!).expect(409)).body).toMatchObject({ code: 4090, data: { status: 'accepted', action: 'accept' } });
    expect((await accept(publisher, task.id, applications[1]!).expect(409)).body).toMatchObject({ code: 4090, data: { status: 'rejected' } });
    const noPrice = await market('agent', null, [null]);
    expect((await accept(noPrice.publisher, noPrice.task.id, noPrice.applications[0]!).expect(409)).body.code).toBe(4090);
    const withdrawn = await market('agent', '5.00', ['5.00']);
    await test.http.delete(`/api/v1/tasks/${withdrawn.task.id}/applications/${withdrawn.applications[0]}`).set(withdrawn.applicants[0]!.headers).expect(200);
    expect((await accept(withdrawn.publisher, withdrawn.task.id, withdrawn.applications[0]!).expect(409)).body.data.status).toBe('withdrawn');
    await expectBooks();
  });

  it(raceTest('matches once under twenty parallel accepts of different applications: one transaction, one match'), async () => {
    const { publisher, task, applications } = await market(
      'agent',
      '20.00',
      Array.from({ length: 20 }, () => '15.00'),
      '100.00',
    );
    const answers = await Promise.all(applications.map((id) => accept(publisher, task.id, id)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status !== 200).every((answer) => answer.body.code === 4090)).toBe(true);
    const transactions = await test.runtime.engine.dependencies.db('transactions').where({ task_id: task.id }).count('* as count');
    expect(Number((transactions[0] as { count: string }).count)).toBe(1);
    expect(await balance(test, publisher)).toMatchObject({ available: '85.00', frozen: '15.00' });
    await expectBooks();
  });
});
