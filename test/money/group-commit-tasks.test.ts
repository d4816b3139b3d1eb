import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions } from '../../src/engine/money/index.ts';
import { createTaskPublish, newTaskRow } from '../../src/engine/work/index.ts';
import { userAccountId } from '../../src/store/accounts.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit for a new task's bounty hold (docs/decisions/money-and-escrow.md "Task money and
 * group commit"): publishing a task is one change (the task inserted open, the hold, the budget's
 * take, its event, the claim) that shares statements with every other change; a publish short of
 * money alone fails its batch and is answered 4020 with the draft kept, one over its key's day
 * alone 4021 with nothing written, while the rest of its batch commits.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const valid = { title: 'Index a catalogue', description: 'Four hundred entries, by author.', mode: 'online', category: 'translation' };
type Answer = { status: number; body: { code: number; data: Record<string, unknown> } };
const db = () => test.runtime.engine.dependencies.db;

function publish(actor: Actor, key: string = randomUUID()) {
  return test.http
    .post('/api/v1/tasks/')
    .set(actor.headers)
    .set('Idempotency-Key', key)
    .send({ ...valid, bounty_amount: '10.00' })
    .then((answer) => answer as unknown as Answer);
}

async function funded(amount: string) {
  const actor = await createAgent(test);
  await credit(test, actor.userId, amount);
  return actor;
}

const tasksOf = async (actor: Actor) =>
  (await db()('tasks').where({ owner_user_id: actor.userId }).select('id', 'status', 'bounty_held')) as { id: string; status: string; bounty_held: string }[];

describe('publishing tasks in group commits', () => {
  it('a known batch: the publishes share one statement; the one short of money alone fails it, the others commit', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const { publishNew } = createTaskPublish(transitions, test.runtime.engine.tasks.events);
    const publishers = [await funded('10.00'), await funded('10.00'), await funded('9.99'), await funded('50.00')];
    const principals = publishers.map((actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null }));
    const at = dependencies.now();
    const rows = principals.map((principal) => newTaskRow(principal, { ...valid, mode: 'online', category: 'translation', bounty_amount: 1000n }, at));
    const before = transitions.batchStats();
    const answers = await Promise.allSettled(
      rows.map((row, index) => withSingleStatement(dependencies.db, (unit) => publishNew(unit, principals[index]!, row, at, (task) => task.id))),
    );
    expect(
      answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : answer.reason instanceof InsufficientBalance ? 'short' : answer.reason)),
    ).toEqual([rows[0]!.id, rows[1]!.id, 'short', rows[3]!.id]);
    const after = transitions.batchStats();
    // All four in the first statement, which failed and was split down to the short one.
    expect(after.changes - before.changes).toBe(4);
    expect(after.largest).toBeGreaterThanOrEqual(4);
    expect(after.splits - before.splits).toBeGreaterThanOrEqual(1);
    const stored = (await db()('tasks')
      .whereIn(
        'id',
        rows.map((row) => row.id),
      )
      .select('id', 'status', 'bounty_held')) as { id: string; status: string; bounty_held: string }[];
    expect(stored.map((row) => [row.id, row.status, row.bounty_held]).sort()).toEqual(
      [rows[0]!, rows[1]!, rows[3]!].map((row) => [row.id, 'open', '1000']).sort(),
    );
    expect(await balance(test, publishers[2]!)).toMatchObject({ available: '9.99', frozen: '0.00' });
    expect(await balance(test, publishers[3]!)).toMatchObject({ available: '40.00', frozen: '10.00' });
    const events = (await db()('task_events')
      .whereIn(
        'task_id',
        rows.map((row) => row.id),
      )
      .select('task_id', 'recipient_user_id', 'event_type')) as Record<string, string>[];
    expect(events.map((event) => `${event.task_id}/${event.recipient_user_id}/${event.event_type}`).sort()).toEqual(
      [0, 1, 3].map((index) => `${rows[index]!.id}/${publishers[index]!.userId}/task.published`).sort(),
    );
    expect(await checkBooks(db())).toEqual([]);
  });

  it(raceTest('answers each publish by its own money and budget while they share statements with purchases, and keeps the books'), async () => {
    const rich = await Promise.all(Array.from({ length: 3 }, () => funded('100.00')));
    const poor = await Promise.all(Array.from({ length: 2 }, () => funded('25.00')));
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '100.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '30.00' }).expect(200);
    // Purchases at the same time, so that publishes share batches with escrow changes.
    const buyer = await funded('100.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const repeated = randomUUID();
    const before = test.runtime.engine.transitions.batchStats();

    const many = (actor: Actor) => Promise.all(Array.from({ length: 6 }, () => publish(actor)));
    const [richAnswers, poorAnswers, budgetedAnswers, replayAnswers, purchases] = await Promise.all([
      Promise.all(rich.map(many)),
      Promise.all(poor.map(many)),
      many(budgeted),
      Promise.all([0, 1, 2].map(() => publish(rich[0]!, repeated))),
      Promise.all(
        Array.from({ length: 6 }, () =>
          test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capability.id }),
        ),
      ),
    ]);

    const expectOpen = (answer: Answer) => {
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      expect(answer.body.data).toMatchObject({ status: 'open', bounty_held: '10.00' });
    };
    for (const answers of richAnswers) answers.forEach(expectOpen);
    for (const answers of poorAnswers) {
      // 25.00 holds two bounties; the others are kept as drafts, answered with the balance then.
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(2);
      for (const refused of answers.filter((answer) => answer.status !== 201)) {
        expect(refused.status).toBe(402);
        expect(refused.body).toMatchObject({ code: 4020, data: { status: 'draft', currency: 'UT', available: '5.00', required: '10.00' } });
      }
    }
    // 30.00 a day: three bounties; the others 4021 with nothing written, not even a draft.
    expect(budgetedAnswers.filter((answer) => answer.status === 201)).toHaveLength(3);
    for (const refused of budgetedAnswers.filter((answer) => answer.status !== 201)) {
      expect(refused.status).toBe(402);
      expect(refused.body).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '0.00' } });
    }
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '30.00', left_today: '0.00' });
    // One key, one task: its uses answer it (or 4091 while the first runs).
    const replayed = replayAnswers.filter((answer) => answer.status !== 409);
    replayed.forEach(expectOpen);
    expect(new Set(replayed.map((answer) => answer.body.data.id)).size).toBe(1);
    for (const answer of replayAnswers.filter((each) => each.status === 409)) expect(answer.body.code).toBe(4091);
    for (const purchase of purchases) expect(purchase.status).toBe(201);

    for (const actor of rich.slice(1)) expect(await balance(test, actor)).toMatchObject({ available: '40.00', frozen: '60.00' });
    expect(await balance(test, rich[0]!)).toMatchObject({ available: '30.00', frozen: '70.00' });
    for (const actor of poor) {
      expect(await balance(test, actor)).toMatchObject({ available: '5.00', frozen: '20.00' });
      const tasks = await tasksOf(actor);
      expect(tasks.filter((task) => task.status === 'open' && task.bounty_held === '1000')).toHaveLength(2);
      expect(tasks.filter((task) => task.status === 'draft' && task.bounty_held === '0')).toHaveLength(4);
    }
    expect(await balance(test, budgeted)).toMatchObject({ available: '70.00', frozen: '30.00' });
    expect((await tasksOf(budgeted)).map((task) => task.status)).toEqual(['open', 'open', 'open']);

    // Each open task was heard of once by its publisher, as published.
    const published = (await db()('task_events')
      .whereIn(
        'task_id',
        (await tasksOf(rich[1]!)).map((task) => task.id),
      )
      .select('recipient_user_id', 'event_type')) as { recipient_user_id: string; event_type: string }[];
    expect(published).toEqual(Array(6).fill({ recipient_user_id: rich[1]!.userId, event_type: 'task.published' }));
    const [negative] = await db()('accounts').whereRaw("kind <> 'external' AND (available < 0 OR frozen < 0)").count({ count: '*' });
    expect(Number(negative!.count)).toBe(0);
    expect(await checkBooks(db())).toEqual([]);

    // Every publish went through the batcher; on PostgreSQL they shared statements. The embedded
    // database runs one statement at a time while nothing else runs, so there a batch rarely forms.
    const after = test.runtime.engine.transitions.batchStats();
    const written = 3 * 6 + 1 + 2 * 2 + 3;
    expect(after.changes - before.changes).toBeGreaterThanOrEqual(written + purchases.length);
    if (usingRealBackends()) expect(after.changes - before.changes).toBeGreaterThan(after.batches - before.batches);
  });
});

describe('reusing a task in one statement', () => {
  it('publishes the new task with its hold; short of money it keeps a draft, and the same key answers the same 4020', async () => {
    const publisher = await funded('12.00');
    const old = (await publish(publisher)).body.data as { id: string };
    const reuse = (key: string, bounty: string) =>
      test.http.post(`/api/v1/tasks/${old.id}/reuse`).set(publisher.headers).set('Idempotency-Key', key).send({ delivery_hours: 6, bounty_amount: bounty });
    const reused = (await reuse(randomUUID(), '2.00').expect(201)).body.data;
    expect(reused).toMatchObject({ status: 'open', bounty_held: '2.00', reused_from: old.id });
    expect(await balance(test, publisher)).toMatchObject({ available: '0.00', frozen: '12.00' });
    const key = randomUUID();
    const short = await reuse(key, '3.00').expect(402);
    expect(short.body).toMatchObject({ code: 4020, data: { status: 'draft', available: '0.00', required: '3.00' } });
    const again = await reuse(key, '3.00').expect(402);
    expect(again.body.data.task_id).toBe(short.body.data.task_id);
    expect((await tasksOf(publisher)).filter((task) => task.status === 'draft')).toHaveLength(1);
    expect(await balance(test, publisher)).toMatchObject({ available: '0.00', frozen: '12.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe.runIf(usingRealBackends())("a publish and a task path holding the publisher's account", () => {
  it('lock in one order: the account, then the task stream counter (no deadlock)', async () => {
    const publisher = await funded('50.00');
    // A draft first, so that the publisher's task stream counter exists to be locked.
    await test.http
      .post('/api/v1/tasks/')
      .set(publisher.headers)
      .send({ ...valid, draft: true })
      .expect(201);
    let answer: Promise<Answer> | undefined;
    await db().transaction(async (trx) => {
      // As a bounty edit, a close or an acceptance does in its transaction: the account, then the task stream counter.
      await trx.raw("SET LOCAL deadlock_timeout = '20ms'");
      await trx('accounts')
        .where({ id: userAccountId(publisher.userId, 'UT') })
        .forNoKeyUpdate()
        .select('id');
      answer = publish(publisher);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBeGreaterThan(0);
      // A deadlock here (40P01) fails the test: the publish held the counter while waiting for the account.
      await trx('task_event_streams').where({ owner_user_id: publisher.userId }).forNoKeyUpdate().select('owner_user_id');
    });
    const published = await answer!;
    expect(published.status, JSON.stringify(published.body)).toBe(201);
    expect(await balance(test, publisher)).toMatchObject({ available: '40.00', frozen: '10.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});
