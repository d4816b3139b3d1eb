import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limits } from '../../src/limits.ts';
import { createIdempotency, createTransitions, type Transitions } from '../../src/engine/money/index.ts';
import { createTaskAcceptance } from '../../src/engine/work/index.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { formatAmount, parseAmount } from '../../src/domain/money.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { budgetOf, type OwnedAgent, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { balance, buy, createCapability, credit } from '../helpers/market.ts';
import { agentPrincipal, fundedAgent, skillOf as skillOfAgent, taskOf as taskOfAgent } from '../helpers/task-market.ts';

/**
 * Group commit for an application's acceptance (docs/decisions/money-and-escrow.md "Task money and
 * group commit"): one change that shares statements with every other: the transaction inserted
 * already frozen, the task matched by its compare-and-set on status and version, the hold released
 * by the task's reference, the applications decided, the budget's charges moved and topped up, the
 * task's events and the transaction's. An application, a withdrawal and a rejection write the task
 * row, so an acceptance decided before one of them committed is decided again.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Answer = { status: number; body: { code: number; data: Record<string, any> } };
const db = () => test.runtime.engine.dependencies.db;
const funded = (amount?: string) => fundedAgent(test, amount);

const apply = async (actor: Actor, taskId: string, body: Record<string, unknown> = {}) => {
  const skill = await skillOfAgent(test, actor);
  const answer = await test.http
    .post(`/api/v1/tasks/${taskId}/applications`)
    .set(actor.headers)
    .send({ skill_id: skill, ...body })
    .expect(201);
  return answer.body.data.id as string;
};

const accept = (actor: Actor, taskId: string, applicationId: string, body: Record<string, unknown> = {}) =>
  test.http
    .post(`/api/v1/tasks/${taskId}/applications/${applicationId}/accept`)
    .set(actor.headers)
    .send(body)
    .then((answer) => answer as unknown as Answer);

const withdraw = (actor: Actor, taskId: string, applicationId: string) =>
  test.http
    .delete(`/api/v1/tasks/${taskId}/applications/${applicationId}`)
    .set(actor.headers)
    .then((answer) => answer as unknown as Answer);

/** A task of `owner`'s with a bounty and `count` applications of fresh agents (with `bodies[i]` each). */
async function taskWithApplications(owner: Actor, bounty: string, bodies: Record<string, unknown>[]) {
  const task = await taskOfAgent(test, owner, { bounty_amount: bounty });
  const applicants = await Promise.all(bodies.map(() => createAgent(test)));
  const applications: string[] = [];
  for (const [index, applicant] of applicants.entries()) applications.push(await apply(applicant, task, bodies[index]));
  return { task, applicants, applications };
}

const taskRow = (id: string) => db()('tasks').where({ id }).first('status', 'bounty_held', 'transaction_id') as Promise<Record<string, string | null>>;
const applicationStatuses = async (taskId: string) =>
  Object.fromEntries(
    ((await db()('task_applications').where({ task_id: taskId }).select('id', 'status')) as { id: string; status: string }[]).map((row) => [
      row.id,
      row.status,
    ]),
  );
const chargesOf = async (refId: string) =>
  ((await db()('agent_budget_charges').where({ ref_id: refId }).select('amount')) as { amount: string }[]).map((row) => row.amount).sort();
const heard = async (taskId: string, type: string) =>
  ((await db()('task_events').where({ task_id: taskId, event_type: type }).select('recipient_user_id')) as { recipient_user_id: string }[])
    .map((row) => row.recipient_user_id)
    .sort();

/** A person's agent key with a budget of `dailyMax` a day, and money. */
async function budgetedPublisher(dailyMax: string): Promise<OwnedAgent> {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, '100.00');
  await setBudget(test, agent.person, agent.apiKeyId, { daily_max: dailyMax }).expect(200);
  return agent;
}

/** The acceptance engine over transitions of its own, whose commit of a planned change is `commitPlanned(theirs)`. */
function acceptanceOver(commitPlanned: (theirs: Transitions['commitPlanned']) => Transitions['commitPlanned']) {
  const { dependencies } = test.runtime.engine;
  const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
  const wrapped = { ...transitions, commitPlanned: commitPlanned(transitions.commitPlanned) };
  return { acceptance: createTaskAcceptance(dependencies, createIdempotency(dependencies), wrapped, test.runtime.engine.tasks.events), transitions };
}

/**
 * The acceptance engine over transitions whose planned changes are held until `count` arrived, so
 * that they leave in one batch; `before` runs for each first (to change a row after it was read).
 */
function gatedAcceptance(count: number, before?: (taskId: string) => Promise<unknown>) {
  const waiting: (() => void)[] = [];
  let submitted = 0;
  const gated = acceptanceOver((commit) => async (unit, planned, response, budget) => {
    if (++submitted <= count) {
      await before?.(planned.change.acceptance!.taskId);
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === count) for (const release of waiting) release();
      });
    }
    return commit(unit, planned, response, budget);
  });
  return { ...gated, submitted: () => submitted };
}

describe('acceptances in a known batch', () => {
  it('share one statement: each matched with its money and events, the short one answered 4020 apart, the one over its day 4021, a withdrawn one decided again', async () => {
    // plain: the price is the bounty. topUp: a budgeted key pays 12.00 on a hold of 10.00. short: 15.00 on 10.00 held and nothing more.
    // overDay: 12.00 on 10.00 held, 11.00 a day. stale: its application is withdrawn after the acceptance read it.
    const plainOwner = await funded('100.00');
    const plain = await taskWithApplications(plainOwner, '10.00', [{}, {}, {}]);
    const topUpOwner = await budgetedPublisher('20.00');
    const topUp = await taskWithApplications(topUpOwner, '10.00', [{ proposed_price: '12.00' }, {}]);
    const shortOwner = await funded('10.00');
    const short = await taskWithApplications(shortOwner, '10.00', [{ proposed_price: '15.00' }]);
    const overDayOwner = await budgetedPublisher('11.00');
    const overDay = await taskWithApplications(overDayOwner, '10.00', [{ proposed_price: '12.00' }]);
    const staleOwner = await funded('100.00');
    const stale = await taskWithApplications(staleOwner, '10.00', [{}, {}]);

    const { acceptance, transitions } = gatedAcceptance(5, async (taskId) => {
      if (taskId === stale.task) expect((await withdraw(stale.applicants[0]!, stale.task, stale.applications[0]!)).status).toBe(200);
    });
    const principal = (owner: Actor | OwnedAgent): Principal => agentPrincipal(owner, 'apiKeyId' in owner ? owner.apiKeyId : undefined);
    const before = transitions.batchStats();
    const answers = await Promise.allSettled([
      acceptance.accept(principal(plainOwner), plain.task, plain.applications[0]!, undefined, null),
      acceptance.accept(principal(topUpOwner), topUp.task, topUp.applications[0]!, 1200n, null),
      acceptance.accept(principal(shortOwner), short.task, short.applications[0]!, 1500n, null),
      acceptance.accept(principal(overDayOwner), overDay.task, overDay.applications[0]!, 1200n, null),
      acceptance.accept(principal(staleOwner), stale.task, stale.applications[0]!, undefined, null),
    ]);
    const codeOf = (answer: PromiseSettledResult<unknown>) => (answer.status === 'fulfilled' ? 0 : (answer.reason as { code: number }).code);
    expect(answers.map(codeOf)).toEqual([0, 0, 4020, 4021, 4090]);
    // All five left in one statement; the short one failed it, and it was split down to that one.
    const after = transitions.batchStats();
    expect(after.largest).toBe(5);
    expect(after.splits - before.splits).toBeGreaterThanOrEqual(1);

    // plain: matched, its hold became the freeze, the two others rejected, everyone heard.
    const plainAnswer = (answers[0] as PromiseFulfilledResult<{ data: Record<string, any> }>).value.data;
    expect(plainAnswer).toMatchObject({ application_id: plain.applications[0], rejected_applications: 2, task: { status: 'matched', bounty_held: '0.00' } });
    expect(plainAnswer.transaction).toMatchObject({ status: 'frozen', price_ut: '10.00', task_id: plain.task });
    const plainRow = await taskRow(plain.task);
    expect(plainRow).toMatchObject({ status: 'matched', bounty_held: '0', transaction_id: plainAnswer.transaction.id });
    expect(Object.values(await applicationStatuses(plain.task)).sort()).toEqual(['accepted', 'rejected', 'rejected']);
    expect(await balance(test, plainOwner)).toMatchObject({ available: '90.00', frozen: '10.00' });
    const everyone = [plainOwner, ...plain.applicants].map((actor) => actor.userId).sort();
    expect(await heard(plain.task, 'task.matched')).toEqual(everyone);
    expect(await heard(plain.task, 'application.accepted')).toEqual([plainOwner.userId, plain.applicants[0]!.userId].sort());
    const rejections = (await db()('task_events').where({ task_id: plain.task, event_type: 'application.rejected' }).select('payload')) as {
      payload: { action: string; previous_status: string; application: { status: string } };
    }[];
    expect(rejections).toHaveLength(4);
    for (const { payload } of rejections) expect(payload).toMatchObject({ action: 'match', previous_status: 'pending', application: { status: 'rejected' } });
    const entries = (await db()('ledger_entries').whereIn('biz_ref_id', [plain.task, plainAnswer.transaction.id]).select('biz_ref_id', 'type', 'amount')) as {
      biz_ref_id: string;
      type: string;
    }[];
    expect(
      entries
        .filter((entry) => entry.biz_ref_id === plain.task)
        .map((entry) => entry.type)
        .sort(),
    ).toEqual(['freeze', 'freeze', 'unfreeze', 'unfreeze']);
    expect(entries.filter((entry) => entry.biz_ref_id === plainAnswer.transaction.id).map((entry) => entry.type)).toEqual(['freeze', 'freeze']);
    const events = (await db()('outbox_events').where({ transaction_id: plainAnswer.transaction.id }).orderBy('transaction_sequence').select('event_type')) as {
      event_type: string;
    }[];
    expect(events.map((event) => event.event_type)).toEqual(['transaction.pending_freeze', 'transaction.frozen']);

    // topUp: 2.00 more frozen; the task's 10.00 charge and the 2.00 are now the transaction's.
    const topUpAnswer = (answers[1] as PromiseFulfilledResult<{ data: Record<string, any> }>).value.data;
    expect(topUpAnswer.transaction).toMatchObject({ status: 'frozen', price_ut: '12.00' });
    expect(await balance(test, topUpOwner)).toMatchObject({ available: '88.00', frozen: '12.00' });
    expect(await chargesOf(topUp.task)).toEqual([]);
    expect(await chargesOf(topUpAnswer.transaction.id)).toEqual(['1200']);
    // The key that accepted is the key that made the purchase, as for a buy.
    expect(await db()('transactions').where({ id: topUpAnswer.transaction.id }).first('api_key_id')).toEqual({ api_key_id: topUpOwner.apiKeyId });

    // short: the transaction path answered with the numbers; nothing moved.
    expect((answers[2] as PromiseRejectedResult).reason).toMatchObject({ data: { available: '10.00', required: '15.00' } });
    expect(await taskRow(short.task)).toMatchObject({ status: 'open', bounty_held: '1000', transaction_id: null });
    expect(await balance(test, shortOwner)).toMatchObject({ available: '0.00', frozen: '10.00' });

    // overDay: refused by the day's bound in the statement, with what is left; nothing written.
    expect((answers[3] as PromiseRejectedResult).reason).toMatchObject({ data: { budget: 'daily', left_today: '1.00', spent_today: '10.00', amount: '2.00' } });
    expect(await taskRow(overDay.task)).toMatchObject({ status: 'open', bounty_held: '1000', transaction_id: null });
    expect(await chargesOf(overDay.task)).toEqual(['1000']);
    expect(Object.values(await applicationStatuses(overDay.task))).toEqual(['pending']);

    // stale: the withdrawal wrote the task row, so the acceptance read it again and found the application withdrawn.
    expect(await taskRow(stale.task)).toMatchObject({ status: 'open', bounty_held: '1000' });
    expect(await applicationStatuses(stale.task)).toEqual({ [stale.applications[0]!]: 'withdrawn', [stale.applications[1]!]: 'pending' });
    expect(await checkBooks(db())).toEqual([]);
  });

  it('a price below the hold gives the difference back to the budget once committed, and a replay under the key answers the same', async () => {
    const owner = await budgetedPublisher('30.00');
    const { task, applications } = await taskWithApplications(owner, '10.00', [{ proposed_price: '7.50' }]);
    const key = `accept-${task}`;
    const first = await test.http.post(`/api/v1/tasks/${task}/applications/${applications[0]}/accept`).set(owner.headers).set('Idempotency-Key', key).send({});
    expect(first.status).toBe(200);
    const again = await test.http.post(`/api/v1/tasks/${task}/applications/${applications[0]}/accept`).set(owner.headers).set('Idempotency-Key', key).send({});
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    const transactionId = first.body.data.transaction.id as string;
    await until(async () => (await chargesOf(transactionId))[0] === '750');
    expect(await chargesOf(transactionId)).toEqual(['750']);
    expect(await chargesOf(task)).toEqual([]);
    expect(await balance(test, owner)).toMatchObject({ available: '92.50', frozen: '7.50' });
    // Releasing the transaction gives back what it holds of the day: 7.50 of 7.50 spent.
    await test.http.post(`/api/v1/transactions/${transactionId}/cancel`).set(owner.headers).send({}).expect(200);
    await until(async () => (await chargesOf(transactionId)).length === 0);
    const usage = (await db()('agent_budget_usage').where({ api_key_id: owner.apiKeyId }).first('spent')) as { spent: string };
    expect(usage.spent).toBe('0');
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('an acceptance whose task changes under every attempt', () => {
  it('is decided by the transaction path: matched once, the key that accepted recorded, its charge moved, every late application rejected', async () => {
    const owner = await budgetedPublisher('30.00');
    const { task, applications } = await taskWithApplications(owner, '10.00', [{ proposed_price: '12.00' }]);
    // Before each of the statement's attempts, another agent applies: that writes the task row, so
    // the attempt's compare-and-set on the task's version misses, the attempts run out, and the
    // transaction path decides under its lock.
    const late: string[] = [];
    const { acceptance } = acceptanceOver((commit) => async (unit, planned, response, budget) => {
      late.push(await apply(await createAgent(test), task));
      return commit(unit, planned, response, budget);
    });
    const answer = await acceptance.accept(agentPrincipal(owner, owner.apiKeyId), task, applications[0]!, 1200n, null);
    expect(late).toHaveLength(limits.compareAndSetAttemptsMax);
    const transaction = answer.data.transaction as { id: string; status: string; price_ut: string };
    expect(transaction).toMatchObject({ status: 'frozen', price_ut: '12.00' });
    expect(answer.data).toMatchObject({ rejected_applications: limits.compareAndSetAttemptsMax });
    expect(await taskRow(task)).toMatchObject({ status: 'matched', bounty_held: '0', transaction_id: transaction.id });
    expect(await applicationStatuses(task)).toEqual(Object.fromEntries([[applications[0]!, 'accepted'], ...late.map((id) => [id, 'rejected'])]));
    // The key that accepted is the key that made the purchase, and the day counts the 12.00 once.
    expect(await db()('transactions').where({ task_id: task }).select('id', 'api_key_id')).toEqual([{ id: transaction.id, api_key_id: owner.apiKeyId }]);
    expect(await chargesOf(task)).toEqual([]);
    expect(await chargesOf(transaction.id)).toEqual(['1200']);
    expect((await budgetOf(test, owner.person, owner.apiKeyId))!.spent_today).toBe('12.00');
    expect(await balance(test, owner)).toMatchObject({ available: '88.00', frozen: '12.00' });
    expect(await checkBooks(db())).toEqual([]);
  });

  it('whose bounty was lowered before its last attempt is refused by the transaction path (4093) with the new hold, nothing moved', async () => {
    const owner = await funded('100.00');
    const { task, applications } = await taskWithApplications(owner, '10.00', [{ proposed_price: '10.00' }]);
    let attempts = 0;
    const { acceptance } = acceptanceOver((commit) => async (unit, planned, response, budget) => {
      if (++attempts < limits.compareAndSetAttemptsMax) await apply(await createAgent(test), task);
      else await test.http.put(`/api/v1/tasks/${task}`).set(owner.headers).send({ bounty_amount: '8.00' }).expect(200);
      return commit(unit, planned, response, budget);
    });
    const refusal = (await acceptance.accept(agentPrincipal(owner), task, applications[0]!, undefined, null).then(
      () => null,
      (error: unknown) => error,
    )) as { code: number; data: Record<string, string> } | null;
    expect(refusal).toMatchObject({ code: 4093, data: { price: '10.00', max_price: '8.00', bounty_held: '8.00' } });
    expect(await taskRow(task)).toMatchObject({ status: 'open', bounty_held: '800', transaction_id: null });
    expect(await db()('transactions').where({ task_id: task })).toEqual([]);
    expect(await balance(test, owner)).toMatchObject({ available: '92.00', frozen: '8.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('the statement and the transaction path decide an acceptance alike', () => {
  type Setup = { principal: Principal; owner: Actor; task: string; application: string; maxPrice?: bigint; person?: OwnedAgent['person']; keyId?: string };
  async function plain(funds: string, taskExtra: Record<string, unknown>, body: Record<string, unknown> = {}, maxPrice?: bigint): Promise<Setup> {
    const owner = await funded(funds);
    const task = await taskOfAgent(test, owner, taskExtra);
    const applicants = await Promise.all([0, 1, 2].map(() => createAgent(test)));
    const [application, ...others] = [await apply(applicants[0]!, task, body), await apply(applicants[1]!, task), await apply(applicants[2]!, task)];
    expect(others).toHaveLength(2);
    return { principal: agentPrincipal(owner), owner, task, application: application, ...(maxPrice ? { maxPrice } : {}) };
  }
  async function budgeted(budget: Record<string, unknown>, body: Record<string, unknown>, maxPrice?: bigint): Promise<Setup> {
    const owner = await ownedAgent(test);
    await credit(test, owner.userId, '100.00');
    await setBudget(test, owner.person, owner.apiKeyId, budget).expect(200);
    const task = await taskOfAgent(test, owner, { bounty_amount: '10.00' });
    const application = await apply(await createAgent(test), task, body);
    return {
      principal: agentPrincipal(owner, owner.apiKeyId),
      owner,
      task,
      application,
      person: owner.person,
      keyId: owner.apiKeyId,
      ...(maxPrice ? { maxPrice } : {}),
    };
  }
  const bounty = { bounty_amount: '10.00' };
  const scenarios: [name: string, setup: () => Promise<Setup>][] = [
    ["the bounty's price, two others pending", () => plain('100.00', bounty)],
    ['a price above the hold with max_price', () => plain('100.00', bounty, { proposed_price: '12.00' }, 1200n)],
    ['a price below the hold', () => plain('100.00', bounty, { proposed_price: '7.50' })],
    ['no bounty, a proposed price with max_price', () => plain('100.00', {}, { proposed_price: '5.00' }, 500n)],
    ['no bounty and no price', () => plain('100.00', {})],
    ['above the ceiling without max_price', () => plain('100.00', bounty, { proposed_price: '12.00' })],
    ['short of money', () => plain('10.00', bounty, { proposed_price: '15.00' }, 1500n)],
    ['a budgeted top-up', () => budgeted({ daily_max: '30.00' }, { proposed_price: '12.00' }, 1200n)],
    ['a budgeted price below the hold', () => budgeted({ daily_max: '30.00' }, { proposed_price: '7.50' })],
    ['a budgeted top-up past its day', () => budgeted({ daily_max: '11.00' }, { proposed_price: '12.00' }, 1200n)],
    ['a budgeted price past per_purchase_max', () => budgeted({ daily_max: '50.00', per_purchase_max: '11.00' }, { proposed_price: '12.00' }, 1200n)],
  ];
  const anonymous = (value: unknown) =>
    JSON.parse(
      JSON.stringify(value)
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '*')
        .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '*'),
    ) as unknown;
  /** What a user would notice of one acceptance: the answer (ids and times left out), the rows, the money, the budget, the events. */
  async function outcome(setup: Setup, run: () => Promise<{ data: unknown }>) {
    const answer = await run().then(
      (done) => anonymous(done.data),
      (error: { code: number; data: unknown }) => ({ code: error.code, data: anonymous(error.data ?? {}) }),
    );
    const row = await taskRow(setup.task);
    const refs = [setup.task, ...(row.transaction_id ? [row.transaction_id] : [])];
    const entries = (await db()('ledger_entries').whereIn('biz_ref_id', refs).select('biz_ref_id', 'type', 'bucket', 'amount')) as Record<string, string>[];
    const events = (await db()('task_events').where({ task_id: setup.task }).select('event_type')) as { event_type: string }[];
    return {
      answer,
      task: { ...row, transaction_id: row.transaction_id ? '*' : null },
      applications: Object.values(await applicationStatuses(setup.task)).sort(),
      balance: await balance(test, setup.owner),
      budget: setup.person ? (await budgetOf(test, setup.person, setup.keyId!))!.spent_today : null,
      charges: { task: await chargesOf(setup.task), transaction: row.transaction_id ? await chargesOf(row.transaction_id) : null },
      entries: entries.map((entry) => `${entry.biz_ref_id === setup.task ? 'task' : 'transaction'} ${entry.type} ${entry.bucket} ${entry.amount}`).sort(),
      taskEvents: events.map((event) => event.event_type).sort(),
      transactionEvents: row.transaction_id
        ? (
            (await db()('outbox_events').where({ transaction_id: row.transaction_id }).orderBy('transaction_sequence').select('event_type')) as {
              event_type: string;
            }[]
          ).map((event) => event.event_type)
        : [],
    };
  }

  it('every case answers, moves money, decides applications, counts the budget and tells the same on both paths', async () => {
    const codes: Record<string, number> = {};
    for (const [name, setup] of scenarios) {
      const inStatement = await setup();
      const statement = await outcome(inStatement, () =>
        test.runtime.engine.tasks.applications.accept(inStatement.principal, inStatement.task, inStatement.application, inStatement.maxPrice, null),
      );
      const inTransaction = await setup();
      // Transitions whose every statement finds the task changed: after the last attempt, the transaction path.
      let submitted = 0;
      const { accept } = acceptanceOver(() => () => {
        submitted++;
        return Promise.resolve(null);
      }).acceptance;
      const transaction = await outcome(inTransaction, () =>
        accept(inTransaction.principal, inTransaction.task, inTransaction.application, inTransaction.maxPrice, null),
      );
      expect(transaction, name).toEqual(statement);
      codes[name] = 'code' in (statement.answer as object) ? (statement.answer as { code: number }).code : 0;
      // A refusal decided before the statement submits nothing; every other case lost every attempt first.
      expect([0, limits.compareAndSetAttemptsMax], name).toContain(submitted);
    }
    // The answers a user sees in each case.
    expect(codes).toEqual({
      "the bounty's price, two others pending": 0,
      'a price above the hold with max_price': 0,
      'a price below the hold': 0,
      'no bounty, a proposed price with max_price': 0,
      'no bounty and no price': 4090,
      'above the ceiling without max_price': 4093,
      'short of money': 4020,
      'a budgeted top-up': 0,
      'a budgeted price below the hold': 0,
      'a budgeted top-up past its day': 4021,
      'a budgeted price past per_purchase_max': 4021,
    });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe.runIf(usingRealBackends())('an acceptance and a withdrawal that commits while the acceptance waits', () => {
  it('the acceptance is decided again: the withdrawn applicant is neither rejected nor told of the match', async () => {
    const owner = await funded('100.00');
    const { task, applicants, applications } = await taskWithApplications(owner, '10.00', [{}, {}, {}]);
    let withdrawn: Promise<Answer> | undefined;
    let accepted: Promise<Answer> | undefined;
    await db().transaction(async (trx) => {
      // Holds the withdrawal after it wrote the task row, waiting for its application's row.
      await trx('task_applications').where({ id: applications[1] }).forNoKeyUpdate().select('id');
      withdrawn = withdraw(applicants[1]!, task, applications[1]!);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBe(1);
      // The acceptance reads the task and its pending applications, then waits for the task row.
      accepted = accept(owner, task, applications[0]!);
      await until(async () => (await lockWaiters(db())) > 1);
      expect(await lockWaiters(db())).toBe(2);
    });
    expect((await withdrawn!).status).toBe(200);
    const answer = await accepted!;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.data.rejected_applications).toBe(1);
    expect(await applicationStatuses(task)).toEqual({ [applications[0]!]: 'accepted', [applications[1]!]: 'withdrawn', [applications[2]!]: 'rejected' });
    expect(await heard(task, 'task.matched')).toEqual([owner.userId, applicants[0]!.userId, applicants[2]!.userId].sort());
    expect(await heard(task, 'application.rejected')).toEqual([owner.userId, applicants[2]!.userId].sort());
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('accepting, applying and withdrawing over HTTP at once', () => {
  it(raceTest('every task is matched once with one transaction, no application stays pending on it, beside purchases'), async () => {
    const owners = await Promise.all(Array.from({ length: 4 }, () => funded('100.00')));
    const tasks = await Promise.all(owners.flatMap((owner) => [0, 1].map(() => taskWithApplications(owner, '10.00', [{}, {}, { proposed_price: '11.00' }]))));
    const ownerOf = (index: number) => owners[Math.floor(index / 2)]!;
    const late = await Promise.all(tasks.map(() => createAgent(test)));
    const lateSkills = await Promise.all(late.map((actor) => skillOfAgent(test, actor)));
    const buyer = await funded('100.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });

    const [accepts, withdrawals, applies, purchases] = await Promise.all([
      // Two applications accepted at once; the third above the bounty with max_price.
      Promise.all(
        tasks.flatMap(({ task, applications }, index) => [
          accept(ownerOf(index), task, applications[0]!),
          accept(ownerOf(index), task, applications[2]!, { max_price: '11.00' }),
        ]),
      ),
      Promise.all(tasks.map(({ task, applicants, applications }) => withdraw(applicants[1]!, task, applications[1]!))),
      Promise.all(
        tasks.map(({ task }, index) =>
          test.http
            .post(`/api/v1/tasks/${task}/applications`)
            .set(late[index]!.headers)
            .send({ skill_id: lateSkills[index] })
            .then((answer) => answer as unknown as Answer),
        ),
      ),
      Promise.all(Array.from({ length: 8 }, () => buy(test, buyer, capability.id))),
    ]);
    expect(purchases.every((purchase) => purchase.status === 'pending_freeze' || purchase.status === 'frozen')).toBe(true);
    for (const [index, { task }] of tasks.entries()) {
      const pair = [accepts[2 * index]!, accepts[2 * index + 1]!];
      // Exactly one acceptance won; the other found the task matched or its application rejected (4090).
      expect(pair.map((answer) => answer.status).sort(), JSON.stringify(pair.map((answer) => answer.body))).toEqual([200, 409]);
      const won = pair.find((answer) => answer.status === 200)!.body.data;
      const row = await taskRow(task);
      expect(row).toMatchObject({ status: 'matched', bounty_held: '0', transaction_id: won.transaction.id });
      const statuses = Object.values(await applicationStatuses(task));
      expect(statuses.filter((status) => status === 'accepted')).toHaveLength(1);
      expect(statuses).not.toContain('pending');
      // The withdrawal either came first or found the application rejected by the match.
      expect([200, 409]).toContain(withdrawals[index]!.status);
      // A late application either got in before the match (and was rejected by it) or found the task matched.
      expect([201, 409]).toContain(applies[index]!.status);
      const transactions = (await db()('transactions').where({ task_id: task }).select('status', 'price')) as { status: string; price: string }[];
      expect(transactions).toEqual([{ status: 'frozen', price: won.transaction.price_ut === '11.00' ? '1100' : '1000' }]);
    }
    // Each publisher's frozen money is exactly its two transactions' prices.
    for (const [index, owner] of owners.entries()) {
      const prices = await Promise.all([0, 1].map(async (offset) => (await taskRow(tasks[2 * index + offset]!.task)).transaction_id!));
      const frozen = (await db()('transactions').whereIn('id', prices).sum({ total: 'price' })) as { total: string }[];
      const wallet = await balance(test, owner);
      expect(wallet.frozen).toBe(formatAmount(BigInt(frozen[0]!.total)));
      expect(parseAmount(wallet.available)! + parseAmount(wallet.frozen)!).toBe(10000n);
    }
    expect(await checkBooks(db())).toEqual([]);
  });
});
