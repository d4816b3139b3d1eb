import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions } from '../../src/engine/money/index.ts';
import { createTaskUpdate } from '../../src/engine/work/index.ts';
import type { ChangeOutcome } from '../../src/store/change.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { agentPrincipal, batchGate, fundedAgent, skillOf as skillOfAgent, taskOf as taskOfAgent } from '../helpers/task-market.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { balance, buy, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit for a task's update (docs/decisions/money-and-escrow.md "Task money and group
 * commit"): the compare-and-set of the task row with the changed fields, the hold moved by a new
 * bounty's difference, the budget's take of a rise, the event of the publisher and every pending
 * applicant, as one change that shares statements with every other. One short of money alone
 * fails its batch and answers 4020 on the transaction path; a fall gives back to the budget once
 * committed; a selection that commits while an edit waits makes it decide again.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Answer = { status: number; body: { code: number; data: Record<string, unknown> } };
const db = () => test.runtime.engine.dependencies.db;
const funded = (amount?: string) => fundedAgent(test, amount);
const taskOf = (actor: Actor, extra?: Record<string, unknown>) => taskOfAgent(test, actor, extra);
const skillOf = (actor: Actor) => skillOfAgent(test, actor);

const put = (actor: Actor, taskId: string, body: Record<string, unknown>) =>
  test.http
    .put(`/api/v1/tasks/${taskId}`)
    .set(actor.headers)
    .send(body)
    .then((answer) => answer as unknown as Answer);

const select = (actor: Actor, taskId: string, body: Record<string, unknown>) =>
  test.http
    .post(`/api/v1/tasks/${taskId}/select-skill`)
    .set(actor.headers)
    .send(body)
    .then((answer) => answer as unknown as Answer);

const updatesHeard = async (taskId: string) =>
  (
    (await db()('task_events').where({ task_id: taskId, event_type: 'task.updated' }).orderBy('id').select('recipient_user_id', 'payload')) as {
      recipient_user_id: string;
      payload: { task: { bounty_held: string; title: string } };
    }[]
  ).map((event) => [event.recipient_user_id, event.payload.task.bounty_held, event.payload.task.title]);

describe('updating tasks in group commits', () => {
  it('a known batch: edits, a raise, a fall and a budgeted raise in one statement; the one short of money alone 4020 on the transaction path', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const [drafter, raiser, short] = [await funded(), await funded(), await funded('15.00')];
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '50.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '30.00' }).expect(200);
    const tasks = [await taskOf(drafter, { draft: true }), await taskOf(raiser), await taskOf(short), await taskOf(budgeted), await taskOf(budgeted)];
    const applicant = await funded();
    expect(
      (
        await test.http
          .post(`/api/v1/tasks/${tasks[1]}/applications`)
          .set(applicant.headers)
          .send({ skill_id: await skillOf(applicant) })
      ).status,
    ).toBe(201);
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '20.00' });
    const principal = agentPrincipal;
    const updates: [Principal, Record<string, unknown>][] = [
      [principal(drafter), { title: 'Index a catalogue, drafted', bounty_amount: 4000n }],
      [principal(raiser), { bounty_amount: 3000n, tags: ['books'] }],
      [principal(short), { bounty_amount: 2000n }],
      [principal(budgeted, budgeted.apiKeyId), { bounty_amount: 400n }],
      [principal(budgeted, budgeted.apiKeyId), { bounty_amount: 1500n }],
    ];
    // The five changes wait for each other, so that they leave in one batch.
    const submit = batchGate(tasks.length, (change) => transitions.submit(change));
    const { update } = createTaskUpdate(dependencies, { submit }, test.runtime.engine.tasks.events);
    const before = transitions.batchStats();
    const answers = await Promise.allSettled(tasks.map((id, index) => update(updates[index]![0], id, updates[index]![1])));
    const summary = answers.map((answer) =>
      answer.status === 'fulfilled'
        ? [answer.value.status, answer.value.bounty_held, answer.value.tags]
        : [(answer.reason as { code: number; data: unknown }).code, (answer.reason as { data: unknown }).data],
    );
    expect(summary).toEqual([
      ['draft', '0.00', []],
      ['open', '30.00', ['books']],
      [4020, { currency: 'UT', available: '5.00', required: '10.00' }],
      ['open', '4.00', []],
      ['open', '15.00', []],
    ]);
    // What each answered is what the task reads as afterwards: the JSON columns written as JSON.
    for (const [index, id] of tasks.entries()) {
      if (answers[index]!.status !== 'fulfilled') continue;
      const owner = [drafter, raiser, short, budgeted, budgeted][index]!;
      const read = (await test.http.get(`/api/v1/tasks/${id}`).set(owner.headers).expect(200)).body.data as Record<string, unknown>;
      expect(read).toEqual((answers[index] as PromiseFulfilledResult<Record<string, unknown>>).value);
    }
    const after = transitions.batchStats();
    // One statement of five, split for the short one; the short one answered on the transaction path.
    expect(after.changes - before.changes).toBe(5);
    expect(after.largest).toBeGreaterThanOrEqual(5);
    expect(after.splits - before.splits).toBeGreaterThanOrEqual(1);

    expect(await balance(test, drafter)).toMatchObject({ available: '50.00', frozen: '0.00' });
    expect(await balance(test, raiser)).toMatchObject({ available: '20.00', frozen: '30.00' });
    expect(await balance(test, short)).toMatchObject({ available: '5.00', frozen: '10.00' });
    expect(await balance(test, budgeted)).toMatchObject({ available: '31.00', frozen: '19.00' });
    // 20.00 charged, 6.00 given back by the fall (once committed), 5.00 taken by the raise.
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '19.00' });
    expect(await updatesHeard(tasks[1]!)).toEqual(
      expect.arrayContaining([
        [raiser.userId, '30.00', 'Index a catalogue'],
        [applicant.userId, '30.00', 'Index a catalogue'],
      ]),
    );
    expect(await updatesHeard(tasks[0]!)).toEqual([[drafter.userId, '0.00', 'Index a catalogue, drafted']]);
    expect(await updatesHeard(tasks[2]!)).toEqual([]);
    expect(await checkBooks(db())).toEqual([]);
  });

  it('over HTTP: another user 4030, a closed task 4090, a rise past the budget 4021 and past the money 4020; nothing moves', async () => {
    const [owner, other] = [await funded('20.00'), await funded()];
    const task = await taskOf(owner);
    expect((await put(other, task, { title: 'Mine' })).body.code).toBe(4030);
    expect((await put(owner, task, { bounty_amount: '25.00' })).body).toMatchObject({ code: 4020, data: { available: '10.00', required: '15.00' } });
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '50.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '12.00' }).expect(200);
    const capped = await taskOf(budgeted);
    expect((await put(budgeted, capped, { bounty_amount: '13.00' })).body).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '2.00' } });
    expect((await put(budgeted, capped, { bounty_amount: '12.00' })).body.data).toMatchObject({ bounty_held: '12.00' });
    await test.http.post(`/api/v1/tasks/${task}/close`).set(owner.headers).send({}).expect(200);
    expect((await put(owner, task, { title: 'Later' })).body.code).toBe(4090);
    expect(await balance(test, owner)).toMatchObject({ available: '20.00', frozen: '0.00' });
    expect(await balance(test, budgeted)).toMatchObject({ available: '38.00', frozen: '12.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('the statement and the transaction path decide an update alike', () => {
  type Setup = { actor: Actor; principal: Principal; task: string; person?: Parameters<typeof budgetOf>[1]; keyId?: string };
  async function plain(funds: string, extra: Record<string, unknown>): Promise<Setup> {
    const actor = await funded(funds);
    return { actor, principal: agentPrincipal(actor), task: await taskOf(actor, { bounty_amount: '10.00', ...extra }) };
  }
  async function withSelection(price: string): Promise<Setup> {
    const setup = await plain('100.00', { bounty_amount: '30.00' });
    const skillOwner = await funded();
    expect((await select(setup.actor, setup.task, { skill_id: await skillOf(skillOwner), price })).status).toBe(201);
    return setup;
  }
  async function budgeted(budget: Record<string, unknown>, later?: Record<string, unknown>): Promise<Setup> {
    const owner = await ownedAgent(test);
    await credit(test, owner.userId, '100.00');
    await setBudget(test, owner.person, owner.apiKeyId, budget).expect(200);
    const task = await taskOf(owner);
    if (later) await setBudget(test, owner.person, owner.apiKeyId, later).expect(200);
    return { actor: owner, principal: agentPrincipal(owner, owner.apiKeyId), task, person: owner.person, keyId: owner.apiKeyId };
  }
  const scenarios: [name: string, setup: () => Promise<Setup>, patch: Record<string, unknown>][] = [
    ['a draft: its bounty and title, no money', () => plain('50.00', { draft: true, bounty_amount: '10.00' }), { title: 'Index it', bounty_amount: 2000n }],
    ['a raise', () => plain('50.00', {}), { bounty_amount: 3000n }],
    ['a raise past the money', () => plain('15.00', {}), { bounty_amount: 3000n }],
    ['the bounty removed', () => plain('50.00', {}), { bounty_amount: null }],
    ['a fall below a waiting selection', () => withSelection('25.00'), { bounty_amount: 500n }],
    ['a rise with a selection above it', () => withSelection('50.00'), { bounty_amount: 4000n }],
    ['the same bounty with a selection above it', () => withSelection('50.00'), { bounty_amount: 3000n }],
    ['contact and images', () => plain('50.00', {}), { contact_info: { type: 'email', value: 'a@b.example' }, image_urls: ['https://img.example/a.png'] }],
    ['a budgeted fall', () => budgeted({ daily_max: '30.00' }), { bounty_amount: 400n }],
    [
      'a budgeted raise into the one category it allows now',
      () => budgeted({ daily_max: '50.00' }, { daily_max: '50.00', categories: ['design'] }),
      { bounty_amount: 2000n, category: 'design' },
    ],
    ['a budgeted raise past its day', () => budgeted({ daily_max: '12.00' }), { bounty_amount: 1500n }],
  ];
  const staleAlways = () => {
    const counter = { submitted: 0 };
    const submit = (): Promise<ChangeOutcome> => {
      counter.submitted++;
      return Promise.resolve({ kind: 'stale' } as ChangeOutcome);
    };
    return { counter, submit };
  };
  /** What a user would notice of one update: the answer (its own ids and times left out), the money, the budget. */
  async function outcome(setup: Setup, run: () => Promise<unknown>) {
    const answer = await run().then(
      async (view) => {
        // What it answered is what the task reads as afterwards, its JSON columns stored as JSON.
        expect(await test.runtime.engine.tasks.get(setup.principal, setup.task)).toEqual(view);
        const kinds = (await db()('tasks')
          .where({ id: setup.task })
          .first(db().raw('jsonb_typeof(term_vector) AS vector, jsonb_typeof(tags) AS tags, jsonb_typeof(image_urls) AS images'))) as Record<string, string>;
        expect(kinds).toEqual({ vector: 'object', tags: 'array', images: 'array' });
        const {
          id: _id,
          user_id: _user,
          created_at: _created,
          updated_at: _updated,
          published_at: _published,
          expires_at: _expires,
          ...rest
        } = view as Record<string, unknown>;
        return rest;
      },
      (error: { code: number; data: Record<string, unknown> | null }) => ({
        code: error.code,
        data: JSON.parse(JSON.stringify(error.data ?? {}).replace(/"(push_id|api_key_id)":"[^"]+"/g, '"$1":"*"')) as unknown,
      }),
    );
    const budget = setup.person ? (await budgetOf(test, setup.person, setup.keyId!))!.spent_today : null;
    return { answer, balance: await balance(test, setup.actor), budget };
  }

  it('every case answers, moves money and counts the budget the same way on both paths', async () => {
    const { dependencies } = test.runtime.engine;
    for (const [name, setup, patch] of scenarios) {
      const inStatement = await setup();
      const statement = await outcome(inStatement, () => test.runtime.engine.tasks.update(inStatement.principal, inStatement.task, patch));
      const inTransaction = await setup();
      const { counter, submit } = staleAlways();
      const { update } = createTaskUpdate(dependencies, { submit }, test.runtime.engine.tasks.events);
      const transaction = await outcome(inTransaction, () => update(inTransaction.principal, inTransaction.task, patch));
      expect(transaction, name).toEqual(statement);
      // The transaction path ran only after every attempt of the statement found its row changed (a refusal decided before it submits nothing).
      expect([0, limits.compareAndSetAttemptsMax], name).toContain(counter.submitted);
    }
    expect(await checkBooks(db())).toEqual([]);
  });

  it('the answers a user sees in each case', async () => {
    const seen: unknown[] = [];
    for (const [, setup, patch] of scenarios) {
      const ready = await setup();
      const { answer, balance: money, budget } = await outcome(ready, () => test.runtime.engine.tasks.update(ready.principal, ready.task, patch));
      const { code, data, status, bounty_held: held } = answer as Record<string, unknown>;
      seen.push([code ?? status, code === undefined ? held : data, money.available, money.frozen, budget]);
    }
    expect(seen).toEqual([
      ['draft', '0.00', '50.00', '0.00', null],
      ['open', '30.00', '20.00', '30.00', null],
      [4020, { currency: 'UT', available: '5.00', required: '20.00' }, '5.00', '10.00', null],
      ['open', '0.00', '50.00', '0.00', null],
      [4092, { bounty_amount: '5.00', pending_selections: [{ push_id: '*', price: '25.00' }] }, '70.00', '30.00', null],
      ['open', '40.00', '60.00', '40.00', null],
      ['open', '30.00', '70.00', '30.00', null],
      ['open', '10.00', '40.00', '10.00', null],
      ['open', '4.00', '96.00', '4.00', '4.00'],
      ['open', '20.00', '80.00', '20.00', '20.00'],
      [4021, expect.objectContaining({ budget: 'daily', left_today: '2.00' }), '90.00', '10.00', '10.00'],
    ]);
  });

  it('a selection that comes after the last attempt is seen by the transaction path: 4092, nothing moves', async () => {
    const setup = await plain('100.00', { bounty_amount: '30.00' });
    const skillOwner = await funded();
    const skill = await skillOf(skillOwner);
    let submitted = 0;
    // Every attempt finds its row changed; after the last, the publisher selects a skill at 25.00.
    const submit = async (): Promise<ChangeOutcome> => {
      if (++submitted === limits.compareAndSetAttemptsMax)
        expect((await select(setup.actor, setup.task, { skill_id: skill, price: '25.00' })).status).toBe(201);
      return { kind: 'stale' };
    };
    const { update } = createTaskUpdate(test.runtime.engine.dependencies, { submit }, test.runtime.engine.tasks.events);
    await expect(update(setup.principal, setup.task, { bounty_amount: 500n })).rejects.toMatchObject({
      code: 4092,
      data: { bounty_amount: '5.00', pending_selections: [{ price: '25.00' }] },
    });
    expect(await balance(test, setup.actor)).toMatchObject({ available: '70.00', frozen: '30.00' });
  });

  it('another space does not find the task, by the same words on both paths', async () => {
    const setup = await plain('50.00', {});
    const person = await signUpHuman(test);
    const stranger: Principal = { user_id: person.userId, caller_type: 'human', platform: null, api_key_id: null };
    const { submit } = staleAlways();
    const { update } = createTaskUpdate(test.runtime.engine.dependencies, { submit }, test.runtime.engine.tasks.events);
    for (const run of [() => test.runtime.engine.tasks.update(stranger, setup.task, { title: 'x' }), () => update(stranger, setup.task, { title: 'x' })])
      await expect(run()).rejects.toMatchObject({ code: 4040, detail: 'task not found' });
  });
});

describe.runIf(usingRealBackends())('a bounty lowered while a selection commits', () => {
  it('the edit is decided again and answers 4092 naming the selection', async () => {
    const owner = await funded();
    const skillOwner = await funded();
    const task = await taskOf(owner, { bounty_amount: '30.00' });
    const skill = await skillOf(skillOwner);
    let selected: Promise<Answer> | undefined;
    let lowered: Promise<Answer> | undefined;
    await db()
      .transaction(async (trx) => {
        // A push of the same skill, not committed: the selection waits on its unique index entry
        // after it has written the task row.
        await trx('task_pushes').insert({
          id: randomUUID(),
          task_id: task,
          skill_id: skill,
          skill_owner_id: skillOwner.userId,
          owner_type: 'agent',
          kind: 'invitation',
          status: 'pending',
          created_at: new Date(),
        });
        selected = select(owner, task, { skill_id: skill, price: '25.00' });
        await until(async () => (await lockWaiters(db())) > 0);
        expect(await lockWaiters(db())).toBe(1);
        // The edit reads the task and its selections before the selection commits, then waits for the row.
        lowered = put(owner, task, { bounty_amount: '5.00' });
        await until(async () => (await lockWaiters(db())) > 1);
        expect(await lockWaiters(db())).toBe(2);
        throw new Error('roll back the held push');
      })
      .catch((error: unknown) => {
        if ((error as Error).message !== 'roll back the held push') throw error;
      });
    const selection = await selected!;
    expect(selection.status, JSON.stringify(selection.body)).toBe(201);
    const answer = await lowered!;
    expect(answer.body).toMatchObject({ code: 4092, data: { pending_selections: [{ push_id: selection.body.data.id, price: '25.00' }] } });
    expect(await balance(test, owner)).toMatchObject({ available: '20.00', frozen: '30.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('updating one task over HTTP at once', () => {
  it(raceTest('every accepted update is one event in order, the hold is the last bounty, beside purchases'), async () => {
    const owner = await funded('60.00');
    const task = await taskOf(owner);
    const buyer = await funded('100.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const bounties = ['20.00', '5.00', '55.00', '70.00', '12.00', '30.00', '1.00', '45.00'];
    const [answers] = await Promise.all([
      Promise.all(bounties.map((bounty, index) => put(owner, task, { bounty_amount: bounty, title: `Index a catalogue, version ${index}` }))),
      Promise.all(Array.from({ length: 8 }, () => buy(test, buyer, capability.id))),
    ]);
    // 70.00 is past the money whatever ran before it; every other one fits in 60.00.
    expect(answers.map((answer) => answer.status)).toEqual(bounties.map((bounty) => (bounty === '70.00' ? 402 : 200)));
    const heard = await updatesHeard(task);
    expect(heard).toHaveLength(7);
    const row = (await db()('tasks').where({ id: task }).first('bounty_held', 'bounty_amount', 'title')) as {
      bounty_held: string;
      bounty_amount: string;
      title: string;
    };
    // The last event says what the row says: the updates were applied one at a time, in the order heard.
    expect(heard.at(-1)).toEqual([owner.userId, `${BigInt(row.bounty_held) / 100n}.00`, row.title]);
    expect(row.bounty_held).toBe(row.bounty_amount);
    expect(await balance(test, owner)).toMatchObject({ frozen: `${BigInt(row.bounty_held) / 100n}.00` });
    expect(await checkBooks(db())).toEqual([]);
  });
});
