import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions } from '../../src/engine/money/index.ts';
import { createTaskPublish } from '../../src/engine/work/index.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { batchGate } from '../helpers/task-market.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit for publishing a draft (docs/decisions/money-and-escrow.md "Task money and group
 * commit"): the draft's compare-and-set on its status and version with the restated fields, the
 * hold, the budget's take, its event and the claim are one change that shares statements with
 * every other; a draft edited meanwhile is decided again; one short of money alone fails its
 * batch and keeps the draft with its restated fields (4020), one over its key's day alone 4021
 * with nothing written, while the rest of its batch commits.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const valid = { title: 'Index a catalogue', description: 'Four hundred entries, by author.', mode: 'online', category: 'translation' };
type Answer = { status: number; body: { code: number; data: Record<string, unknown> } };
type TaskRecord = { id: string; status: string; bounty_held: string; bounty_amount: string | null; delivery_hours: number | null; title: string };
const db = () => test.runtime.engine.dependencies.db;

async function funded(amount: string) {
  const actor = await createAgent(test);
  await credit(test, actor.userId, amount);
  return actor;
}

async function draftOf(actor: Actor, bounty = '10.00'): Promise<string> {
  const answer = await test.http
    .post('/api/v1/tasks/')
    .set(actor.headers)
    .send({ ...valid, draft: true, bounty_amount: bounty })
    .expect(201);
  return answer.body.data.id as string;
}

function publishDraft(actor: Actor, id: string, key: string = randomUUID(), body: Record<string, unknown> = { delivery_hours: 7 }) {
  return test.http
    .post(`/api/v1/tasks/${id}/publish-draft`)
    .set(actor.headers)
    .set('Idempotency-Key', key)
    .send(body)
    .then((answer) => answer as unknown as Answer);
}

const taskRows = async (ids: string[]) =>
  new Map(
    ((await db()('tasks').whereIn('id', ids).select('id', 'status', 'bounty_held', 'bounty_amount', 'delivery_hours', 'title')) as TaskRecord[]).map((row) => [
      row.id,
      row,
    ]),
  );

const eventsOf = async (ids: string[]) =>
  (await db()('task_events').whereIn('task_id', ids).orderBy('id').select('task_id', 'recipient_user_id', 'event_type', 'payload')) as {
    task_id: string;
    recipient_user_id: string;
    event_type: string;
    payload: { previous_status: string | null; task: { status: string; delivery_hours: number | null; title: string } };
  }[];

describe('publishing drafts in group commits', () => {
  it('a known batch: one statement; the draft short of money alone fails it, one over its day alone 4021, an edited one is decided again', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const publishers = [await funded('10.00'), await funded('9.99'), await funded('50.00'), await funded('50.00')];
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '100.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '5.00' }).expect(200);
    const drafts = [...(await Promise.all(publishers.map((actor) => draftOf(actor)))), await draftOf(budgeted)];
    const principals: Principal[] = [
      ...publishers.map((actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null })),
      { user_id: budgeted.userId, caller_type: 'agent', platform: 'claude_code', api_key_id: budgeted.apiKeyId, budget_key_id: budgeted.apiKeyId },
    ];
    // The five first changes wait for each other, so that they leave in one batch; the fourth
    // draft is edited (as a PATCH would) after it was read and before its statement.
    const submit = batchGate(
      drafts.length,
      (change) => transitions.submit(change),
      async (change) => {
        if (change.transactionId === drafts[3]) await db()('tasks').where({ id: drafts[3] }).update({ title: 'Index a catalogue, edited' });
      },
    );
    const { publishDraft: publish } = createTaskPublish({ submit }, test.runtime.engine.tasks.events);
    const bodies = [{ delivery_hours: 7 }, { delivery_hours: 7 }, { delivery_hours: 7, bounty_amount: 2000n }, { delivery_hours: 7 }, { delivery_hours: 7 }];
    const before = transitions.batchStats();
    const answers = await Promise.allSettled(
      drafts.map((id, index) =>
        withSingleStatement(dependencies.db, (unit) => publish(unit, principals[index]!, id, bodies[index]!, dependencies.now, (task) => task.id)),
      ),
    );
    expect(
      answers.map((answer) =>
        answer.status === 'fulfilled'
          ? answer.value
          : answer.reason instanceof InsufficientBalance
            ? 'short'
            : (answer.reason as { code?: number; data?: unknown }).code === 4021
              ? ['4021', (answer.reason as { data: unknown }).data]
              : answer.reason,
      ),
    ).toEqual([drafts[0], 'short', drafts[2], drafts[3], ['4021', expect.objectContaining({ budget: 'daily', daily_max: '5.00', left_today: '5.00' })]]);
    const after = transitions.batchStats();
    // One statement of five, split down to the short one; the edited draft's second decision alone.
    expect(after.changes - before.changes).toBe(6);
    expect(after.batches - before.batches).toBe(2);
    expect(after.largest).toBeGreaterThanOrEqual(5);
    expect(after.splits - before.splits).toBeGreaterThanOrEqual(1);

    const rows = await taskRows(drafts);
    expect(drafts.map((id) => rows.get(id)).map((row) => [row!.status, row!.bounty_held, row!.bounty_amount, row!.delivery_hours])).toEqual([
      ['open', '1000', '1000', 7],
      ['draft', '0', '1000', null],
      ['open', '2000', '2000', 7],
      ['open', '1000', '1000', 7],
      ['draft', '0', '1000', null],
    ]);
    expect(rows.get(drafts[3]!)!.title).toBe('Index a catalogue, edited');
    expect(await balance(test, publishers[0]!)).toMatchObject({ available: '0.00', frozen: '10.00' });
    expect(await balance(test, publishers[1]!)).toMatchObject({ available: '9.99', frozen: '0.00' });
    expect(await balance(test, publishers[2]!)).toMatchObject({ available: '30.00', frozen: '20.00' });
    expect(await balance(test, publishers[3]!)).toMatchObject({ available: '40.00', frozen: '10.00' });
    expect(await balance(test, budgeted)).toMatchObject({ available: '100.00', frozen: '0.00' });
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '0.00' });
    // Each published draft was heard of by its publisher: drafted, then published from draft.
    const heard = (await eventsOf(drafts)).filter((event) => event.event_type === 'task.published');
    expect(heard.map((event) => [event.task_id, event.recipient_user_id, event.payload.previous_status, event.payload.task.status]).sort()).toEqual(
      [0, 2, 3].map((index) => [drafts[index], publishers[index]!.userId, 'draft', 'open']).sort(),
    );
    expect(heard.find((event) => event.task_id === drafts[3])!.payload.task.title).toBe('Index a catalogue, edited');
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('publishing a draft in one statement, one at a time', () => {
  it('a 4020 keeps the restated fields and is stored under its key; a draft without a bounty holds nothing', async () => {
    const publisher = await funded('4.00');
    const draft = await draftOf(publisher, '5.00');
    const key = randomUUID();
    const short = await publishDraft(publisher, draft, key, { delivery_hours: 9 });
    expect(short.status).toBe(402);
    expect(short.body).toMatchObject({ code: 4020, data: { task_id: draft, status: 'draft', available: '4.00', required: '5.00' } });
    await credit(test, publisher.userId, '1.00');
    // The key answers what it answered, though the money is there now; the envelope's timestamp
    // is when each answer was sent (docs/decisions/api-surface.md), so it may have ticked.
    const { timestamp: _first, ...firstAnswer } = short.body as Answer['body'] & { timestamp: number };
    const { timestamp: _again, ...replayed } = (await publishDraft(publisher, draft, key, { delivery_hours: 9 })).body as Answer['body'] & {
      timestamp: number;
    };
    expect(replayed).toEqual(firstAnswer);
    expect((await taskRows([draft])).get(draft)).toMatchObject({ status: 'draft', delivery_hours: 9, bounty_held: '0' });
    const opened = await publishDraft(publisher, draft, randomUUID(), { delivery_hours: 10 });
    expect(opened.body.data).toMatchObject({ status: 'open', bounty_held: '5.00', delivery_hours: 10 });
    const free = await publishDraft(publisher, await draftOf(publisher), randomUUID(), { delivery_hours: 3, bounty_amount: null });
    expect(free.status, JSON.stringify(free.body)).toBe(200);
    expect(free.body.data).toMatchObject({ status: 'open', bounty_amount: null, bounty_held: '0.00', delivery_hours: 3 });
    expect(await balance(test, publisher)).toMatchObject({ available: '0.00', frozen: '5.00' });
    expect((await eventsOf([draft])).map((event) => [event.event_type, event.payload.previous_status])).toEqual([
      ['task.drafted', null],
      ['task.updated', 'draft'],
      ['task.published', 'draft'],
    ]);
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('publishing drafts over HTTP at once', () => {
  it(raceTest('answers each publish-draft by its money, budget, key and draft while they share statements with purchases, and keeps the books'), async () => {
    const rich = await Promise.all(Array.from({ length: 3 }, () => funded('100.00')));
    const poor = await Promise.all(Array.from({ length: 2 }, () => funded('25.00')));
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '100.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '30.00' }).expect(200);
    const six = (actor: Actor) => Promise.all(Array.from({ length: 6 }, () => draftOf(actor)));
    const [richDrafts, poorDrafts, budgetedDrafts] = [await Promise.all(rich.map(six)), await Promise.all(poor.map(six)), await six(budgeted)];
    // One draft published under one key three times, one edited while it is published, one published twice.
    const [replayed, edited, doubled] = [await draftOf(rich[0]!), await draftOf(rich[1]!), await draftOf(rich[2]!)];
    const buyer = await funded('100.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const key = randomUUID();
    const before = test.runtime.engine.transitions.batchStats();

    const all = (actor: Actor, ids: string[]) => Promise.all(ids.map((id) => publishDraft(actor, id)));
    const [richAnswers, poorAnswers, budgetedAnswers, replayAnswers, [editAnswer, patchAnswer], doubleAnswers, purchases] = await Promise.all([
      Promise.all(rich.map((actor, index) => all(actor, richDrafts[index]!))),
      Promise.all(poor.map((actor, index) => all(actor, poorDrafts[index]!))),
      all(budgeted, budgetedDrafts),
      Promise.all([0, 1, 2].map(() => publishDraft(rich[0]!, replayed, key))),
      Promise.all([
        publishDraft(rich[1]!, edited),
        test.http.put(`/api/v1/tasks/${edited}`).set(rich[1]!.headers).send({ title: 'Index a catalogue, edited' }),
      ]),
      Promise.all([publishDraft(rich[2]!, doubled), publishDraft(rich[2]!, doubled)]),
      Promise.all(
        Array.from({ length: 6 }, () =>
          test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capability.id }),
        ),
      ),
    ]);

    const expectOpen = (answer: Answer) => {
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.data).toMatchObject({ status: 'open', bounty_held: '10.00', delivery_hours: 7 });
    };
    for (const answers of richAnswers) answers.forEach(expectOpen);
    for (const answers of poorAnswers) {
      // 25.00 holds two bounties; the other drafts stay drafts, answered with the balance then.
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(2);
      for (const refused of answers.filter((answer) => answer.status !== 200)) {
        expect(refused.status).toBe(402);
        expect(refused.body).toMatchObject({ code: 4020, data: { status: 'draft', currency: 'UT', available: '5.00', required: '10.00' } });
      }
    }
    // 30.00 a day: three bounties; the others 4021 with nothing written.
    expect(budgetedAnswers.filter((answer) => answer.status === 200)).toHaveLength(3);
    for (const refused of budgetedAnswers.filter((answer) => answer.status !== 200)) {
      expect(refused.status).toBe(402);
      expect(refused.body).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '0.00' } });
    }
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '30.00', left_today: '0.00' });
    // One key, one publish: its uses answer it (or 4091 while the first runs).
    replayAnswers.filter((answer) => answer.status !== 409).forEach(expectOpen);
    expect(replayAnswers.filter((answer) => answer.status !== 409).length).toBeGreaterThanOrEqual(1);
    for (const answer of replayAnswers.filter((each) => each.status === 409)) expect(answer.body.code).toBe(4091);
    // The edit and the publish both happen, in either order.
    expectOpen(editAnswer);
    expect(patchAnswer.status, JSON.stringify(patchAnswer.body)).toBe(200);
    // A draft is published once: the other publish is refused by the state.
    expect(doubleAnswers.map((answer) => answer.status).sort()).toEqual([200, 409]);
    expect(doubleAnswers.find((answer) => answer.status === 409)!.body.code).toBe(4090);
    for (const purchase of purchases) expect(purchase.status).toBe(201);

    const rows = await taskRows([...richDrafts.flat(), ...poorDrafts.flat(), ...budgetedDrafts, replayed, edited, doubled]);
    for (const id of [...richDrafts.flat(), replayed, edited, doubled])
      expect(rows.get(id)).toMatchObject({ status: 'open', bounty_held: '1000', delivery_hours: 7 });
    expect(rows.get(edited)!.title).toBe('Index a catalogue, edited');
    for (const ids of poorDrafts) {
      const statuses = ids.map((id) => rows.get(id)!);
      expect(statuses.filter((row) => row.status === 'open' && row.bounty_held === '1000')).toHaveLength(2);
      // A draft kept for want of money keeps its restated fields.
      expect(statuses.filter((row) => row.status === 'draft' && row.bounty_held === '0' && row.delivery_hours === 7)).toHaveLength(4);
    }
    const budgetedRows = budgetedDrafts.map((id) => rows.get(id)!);
    expect(budgetedRows.filter((row) => row.status === 'open' && row.delivery_hours === 7)).toHaveLength(3);
    // Over the day nothing is written, not even the restated fields.
    expect(budgetedRows.filter((row) => row.status === 'draft' && row.delivery_hours === null)).toHaveLength(3);

    for (const actor of rich) expect(await balance(test, actor)).toMatchObject({ available: '30.00', frozen: '70.00' });
    for (const actor of poor) expect(await balance(test, actor)).toMatchObject({ available: '5.00', frozen: '20.00' });
    expect(await balance(test, budgeted)).toMatchObject({ available: '70.00', frozen: '30.00' });
    // Each draft published was heard of once by its publisher, as published from draft; each kept one, as updated.
    const events = await eventsOf([...poorDrafts[0]!, doubled, replayed]);
    const published = events.filter((event) => event.event_type === 'task.published');
    expect(published.map((event) => event.task_id).sort()).toEqual(
      [...poorDrafts[0]!.filter((id) => rows.get(id)!.status === 'open'), doubled, replayed].sort(),
    );
    for (const event of published) expect(event.payload.previous_status).toBe('draft');
    expect(events.filter((event) => event.event_type === 'task.updated')).toHaveLength(4);
    const [negative] = await db()('accounts').whereRaw("kind <> 'external' AND (available < 0 OR frozen < 0)").count({ count: '*' });
    expect(Number(negative!.count)).toBe(0);
    expect(await checkBooks(db())).toEqual([]);

    // Every publish went through the batcher (a 4020 once more on the transaction path); on
    // PostgreSQL they shared statements.
    const after = test.runtime.engine.transitions.batchStats();
    const written = 3 * 6 + 2 * 2 + 3 + 3;
    expect(after.changes - before.changes).toBeGreaterThanOrEqual(written + purchases.length);
    if (usingRealBackends()) expect(after.changes - before.changes).toBeGreaterThan(after.batches - before.batches);
  });
});
