import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions } from '../../src/engine/money/index.ts';
import { createTaskEnd, DecideInTransaction } from '../../src/engine/work/index.ts';
import type { ChangeOutcome } from '../../src/store/change.ts';
import { FreshClaimNotWritten } from '../../src/db/transaction.ts';
import { limits } from '../../src/limits.ts';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { agentPrincipal, batchGate, fundedAgent, skillOf as skillOfAgent, taskOf as taskOfAgent } from '../helpers/task-market.ts';
import { lockWaiters, until } from '../helpers/locks.ts';
import { admin, balance, buy, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit for ending a task (docs/decisions/money-and-escrow.md "Task money and group
 * commit"): a close by the publisher or a cancel by the operator is one change that shares
 * statements with every other: the task's compare-and-set on its status and version, the hold's
 * release, the move's event for the publisher and every pending applicant, the claim. An
 * application writes the task row, so a close decided before an application committed is decided
 * again and its applicant hears it.
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

const apply = (actor: Actor, taskId: string, skillId: string) =>
  test.http
    .post(`/api/v1/tasks/${taskId}/applications`)
    .set(actor.headers)
    .send({ skill_id: skillId })
    .then((answer) => answer as unknown as Answer);

const close = (actor: Actor, taskId: string, key?: string) => {
  const request = test.http.post(`/api/v1/tasks/${taskId}/close`).set(actor.headers);
  return (key ? request.set('Idempotency-Key', key) : request).send({}).then((answer) => answer as unknown as Answer);
};

const cancel = (taskId: string) =>
  test.http
    .post(`/api/v1/admin/tasks/${taskId}/cancel`)
    .set(admin)
    .send({})
    .then((answer) => answer as unknown as Answer);

/** Who heard each task end: task id -> recipients of its task.closed or task.cancelled, sorted. */
async function endHeard(ids: string[]) {
  const rows = (await db()('task_events')
    .whereIn('task_id', ids)
    .whereIn('event_type', ['task.closed', 'task.cancelled'])
    .select('task_id', 'recipient_user_id', 'event_type')) as { task_id: string; recipient_user_id: string; event_type: string }[];
  const heard = new Map<string, string[]>();
  for (const row of rows) heard.set(row.task_id, [...(heard.get(row.task_id) ?? []), `${row.event_type} ${row.recipient_user_id}`].sort());
  return heard;
}

const taskRows = async (ids: string[]) =>
  new Map(
    (
      (await db()('tasks').whereIn('id', ids).select('id', 'status', 'bounty_held', 'title')) as {
        id: string;
        status: string;
        bounty_held: string;
        title: string;
      }[]
    ).map((row) => [row.id, row]),
  );

describe('ending tasks in group commits', () => {
  it('a known batch: closes and a cancel in one statement; an edited task is decided again; pending applicants hear; budgets given back', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const [first, second, third] = [await funded(), await funded(), await funded()];
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '50.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '30.00' }).expect(200);
    const applicants = [await funded(), await funded()];
    const tasks = [
      await taskOf(first),
      await taskOf(second, { draft: true, bounty_amount: '5.00' }),
      await taskOf(third),
      await taskOf(budgeted),
      await taskOf(first),
    ];
    for (const applicant of applicants) expect((await apply(applicant, tasks[0]!, await skillOf(applicant))).status).toBe(201);
    // The withdrawn application's applicant does not hear the close: only pending ones do.
    const withdrawn = await funded();
    const gone = (await apply(withdrawn, tasks[0]!, await skillOf(withdrawn))).body.data.id as string;
    await test.http.delete(`/api/v1/tasks/${tasks[0]}/applications/${gone}`).set(withdrawn.headers).expect(200);
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '10.00' });
    const principal = agentPrincipal;
    const ends: { viewer: Principal | null; action: 'close' | 'cancel' }[] = [
      { viewer: principal(first), action: 'close' },
      { viewer: principal(second), action: 'close' },
      { viewer: principal(third), action: 'close' },
      { viewer: principal(budgeted, budgeted.apiKeyId), action: 'close' },
      { viewer: null, action: 'cancel' },
    ];
    // The five changes wait for each other, so that they leave in one batch; the third task is
    // edited (as a PATCH would) after it was read and before its statement.
    const submit = batchGate(
      tasks.length,
      (change) => transitions.submit(change),
      async (change) => {
        if (change.transactionId === tasks[2]) await db()('tasks').where({ id: tasks[2] }).update({ title: 'Index a catalogue, edited' });
      },
    );
    const { endTask } = createTaskEnd({ submit }, test.runtime.engine.tasks.events, dependencies.db);
    const before = transitions.batchStats();
    const answers = await Promise.all(
      tasks.map((id, index) =>
        withSingleStatement(dependencies.db, (unit) =>
          endTask(unit, ends[index]!.viewer, id, ends[index]!.action, dependencies.now, (task) => [task.status, task.bounty_held, task.title]),
        ),
      ),
    );
    expect(answers.map((answer) => answer.slice(0, 2))).toEqual([
      ['closed', '0'],
      ['closed', '0'],
      ['closed', '0'],
      ['closed', '0'],
      ['cancelled', '0'],
    ]);
    // The edited task was decided again on its edited row.
    expect(answers[2]![2]).toBe('Index a catalogue, edited');
    const after = transitions.batchStats();
    expect(after.changes - before.changes).toBe(6);
    expect(after.batches - before.batches).toBe(2);
    expect(after.largest).toBeGreaterThanOrEqual(5);

    const rows = await taskRows(tasks);
    expect(tasks.map((id) => [rows.get(id)!.status, rows.get(id)!.bounty_held])).toEqual([
      ['closed', '0'],
      ['closed', '0'],
      ['closed', '0'],
      ['closed', '0'],
      ['cancelled', '0'],
    ]);
    for (const actor of [first, second, third, budgeted]) expect(await balance(test, actor)).toMatchObject({ available: '50.00', frozen: '0.00' });
    // Given back once the release committed: the budget's day is as before the bounty.
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '0.00' });
    const heard = await endHeard(tasks);
    expect(heard.get(tasks[0]!)).toEqual([first, ...applicants].map((actor) => `task.closed ${actor.userId}`).sort());
    expect(heard.get(tasks[1]!)).toEqual([`task.closed ${second.userId}`]);
    expect(heard.get(tasks[4]!)).toEqual([`task.cancelled ${first.userId}`]);
    expect(await checkBooks(db())).toEqual([]);
  });

  it('answers a close of another user 4030, of a closed task 4090, a cancel of no task 4040, replays a key, and closes a draft; nothing moves', async () => {
    const [owner, other] = [await funded(), await funded()];
    const task = await taskOf(owner);
    expect((await close(other, task)).body.code).toBe(4030);
    expect((await cancel(randomUUID())).body).toMatchObject({ code: 4040, data: { detail: 'task not found' } });
    // Another space's task is not found either, by the same words.
    const person = await signUpHuman(test);
    expect((await close(person, task)).body).toMatchObject({ code: 4040, data: { detail: 'task not found' } });
    const key = randomUUID();
    const closed = await close(owner, task, key);
    expect(closed.status).toBe(200);
    expect(closed.body.data).toMatchObject({ status: 'closed', bounty_held: '0.00' });
    // What the close answered is what the task reads as afterwards.
    expect((await test.http.get(`/api/v1/tasks/${task}`).set(owner.headers).expect(200)).body.data).toEqual(closed.body.data);
    // The replay answers the same data; the envelope's timestamp is when it answered, which may be a second later.
    expect(await close(owner, task, key)).toMatchObject({ status: 200, body: { code: 0, data: closed.body.data } });
    expect((await close(owner, task)).body).toMatchObject({ code: 4090, data: { status: 'closed', action: 'close' } });
    expect((await cancel(task)).body.code).toBe(4090);
    // A draft closes too (it failed a constraint before, 5000): never published, nothing held.
    const draft = await taskOf(owner, { draft: true, bounty_amount: '10.00' });
    const closedDraft = await close(owner, draft);
    expect(closedDraft.status, JSON.stringify(closedDraft.body)).toBe(200);
    expect(closedDraft.body.data).toMatchObject({ id: draft, status: 'closed', bounty_held: '0.00', published_at: null });
    expect((await cancel(draft)).body.code).toBe(4090);
    expect(await balance(test, owner)).toMatchObject({ available: '50.00', frozen: '0.00' });
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('the sweeper expires tasks past their deadline in shared statements', () => {
  it(raceTest('twelve due tasks, two sweepers and their publisher closing some at once: each ends once, in fewer statements than tasks'), async () => {
    const owners = [await funded(), await funded()];
    const budgeted = await ownedAgent(test);
    await credit(test, budgeted.userId, '50.00');
    await setBudget(test, budgeted.person, budgeted.apiKeyId, { daily_max: '40.00' }).expect(200);
    const soon = () => ({ bounty_amount: '2.00', expires_at: new Date(test.clock.now.getTime() + 3_600_000).toISOString() });
    const tasks = [
      ...(await Promise.all(owners.flatMap((owner) => [0, 1, 2, 3, 4].map(() => taskOf(owner, soon()))))),
      await taskOf(budgeted, soon()),
      await taskOf(budgeted, soon()),
    ];
    const later = await taskOf(owners[0]!);
    const applicant = await funded();
    expect((await apply(applicant, tasks[0]!, await skillOf(applicant))).status).toBe(201);
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '4.00' });
    test.clock.advanceMs(3_600_001);
    const before = test.runtime.engine.transitions.batchStats();
    const { sweeper } = test.runtime.engine;
    const [first, second, ...closes] = await Promise.all([sweeper.runOnce(), sweeper.runOnce(), close(owners[1]!, tasks[5]!), close(owners[1]!, tasks[6]!)]);
    const closed = (closes as Answer[]).filter((answer) => answer.status === 200).length;
    expect((closes as Answer[]).every((answer) => answer.status === 200 || answer.body.code === 4090)).toBe(true);
    // Every due task ended once: expired by one of the sweepers, or closed by its publisher.
    expect(first + second + closed).toBe(tasks.length);
    const rows = await taskRows([...tasks, later]);
    expect(tasks.map((id) => rows.get(id)!).every((row) => ['expired', 'closed'].includes(row.status) && row.bounty_held === '0')).toBe(true);
    expect(rows.get(later)!.status).toBe('open');
    const heard = await db()('task_events')
      .whereIn('task_id', tasks)
      .whereIn('event_type', ['task.expired', 'task.closed'])
      .select('task_id', 'recipient_user_id');
    expect(heard).toHaveLength(tasks.length + 1);
    expect(heard.filter((event: { recipient_user_id: string }) => event.recipient_user_id === applicant.userId)).toHaveLength(1);
    expect(await balance(test, owners[0]!)).toMatchObject({ available: '40.00', frozen: '10.00' });
    expect(await balance(test, owners[1]!)).toMatchObject({ available: '50.00', frozen: '0.00' });
    expect(await balance(test, budgeted)).toMatchObject({ available: '50.00', frozen: '0.00' });
    expect(await budgetOf(test, budgeted.person, budgeted.apiKeyId)).toMatchObject({ spent_today: '0.00' });
    const after = test.runtime.engine.transitions.batchStats();
    if (usingRealBackends()) expect(after.batches - before.batches).toBeLessThan(after.changes - before.changes);
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe("a task end and the batcher's other answers", () => {
  /** Ends `task` in one statement with `submit` answering every change by `kind`; how many were submitted. */
  async function endAnswered(task: string, owner: Actor, kind: ChangeOutcome['kind']) {
    const { dependencies } = test.runtime.engine;
    let submitted = 0;
    const submit = (): Promise<ChangeOutcome> => {
      submitted++;
      return Promise.resolve({ kind } as ChangeOutcome);
    };
    const { endTask } = createTaskEnd({ submit }, test.runtime.engine.tasks.events, dependencies.db);
    const viewer: Principal = { user_id: owner.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null };
    const outcome = await withSingleStatement(dependencies.db, (unit) => endTask(unit, viewer, task, 'close', dependencies.now, (row) => row.status)).catch(
      (error: unknown) => error,
    );
    return { outcome, submitted };
  }

  it('an expiry of a task before its deadline is refused and writes nothing; past the deadline it expires', async () => {
    const { dependencies } = test.runtime.engine;
    const owner = await funded();
    // The engine's clock is the test clock plus the time the file has run: the deadline is set from it.
    const task = await taskOf(owner, { bounty_amount: '10.00', expires_at: new Date(dependencies.now().getTime() + 60_000).toISOString() });
    const { endTask } = createTaskEnd(test.runtime.engine.transitions, test.runtime.engine.tasks.events, dependencies.db);
    const expire = () => withSingleStatement(dependencies.db, (unit) => endTask(unit, null, task, 'expire', dependencies.now, (row) => row.status));
    test.clock.advanceMs(30_000);
    await expect(expire()).rejects.toMatchObject({ code: 4090, detail: 'the task is not past its deadline', data: { status: 'open', action: 'expire' } });
    expect((await taskRows([task])).get(task)).toMatchObject({ status: 'open', bounty_held: '1000' });
    test.clock.advanceMs(30_001);
    expect(await expire()).toBe('expired');
    expect(await balance(test, owner)).toMatchObject({ available: '50.00', frozen: '0.00' });
  });

  it('a row stale under every attempt goes to the transaction path after compareAndSetAttemptsMax; a lost claim is 4091; a taken key is not written', async () => {
    const owner = await funded();
    const task = await taskOf(owner);
    const stale = await endAnswered(task, owner, 'stale');
    expect(stale.outcome).toBeInstanceOf(DecideInTransaction);
    expect(stale.submitted).toBe(limits.compareAndSetAttemptsMax);
    const lost = await endAnswered(task, owner, 'claim_lost');
    expect(lost.outcome).toMatchObject({ code: 4091, detail: 'a request with this Idempotency-Key is still being processed' });
    expect(lost.submitted).toBe(1);
    expect((await endAnswered(task, owner, 'key_taken')).outcome).toBeInstanceOf(FreshClaimNotWritten);
    // None of them wrote anything: the task is open with its hold.
    expect((await taskRows([task])).get(task)).toMatchObject({ status: 'open', bounty_held: '1000' });
    expect(await balance(test, owner)).toMatchObject({ available: '40.00', frozen: '10.00' });
  });
});

describe.runIf(usingRealBackends())('a close and an application that commits while the close waits', () => {
  it('the close is decided again, and the new applicant hears it', async () => {
    const owner = await funded();
    const applicant = await funded();
    const [task, warmUp] = [await taskOf(owner), await taskOf(owner)];
    const skill = await skillOf(applicant);
    // The applicant's task stream counter exists once it has heard anything.
    expect((await apply(applicant, warmUp, skill)).status).toBe(201);
    let applied: Promise<Answer> | undefined;
    let closed: Promise<Answer> | undefined;
    await db().transaction(async (trx) => {
      // Holds the application after it wrote the task row and its own row, before its events.
      await trx('task_event_streams').where({ owner_user_id: applicant.userId }).forNoKeyUpdate().select('owner_user_id');
      applied = apply(applicant, task, skill);
      await until(async () => (await lockWaiters(db())) > 0);
      expect(await lockWaiters(db())).toBe(1);
      // The close reads the task and its applicants before the application commits, then waits for the row.
      closed = close(owner, task);
      await until(async () => (await lockWaiters(db())) > 1);
      expect(await lockWaiters(db())).toBe(2);
    });
    expect((await applied!).status).toBe(201);
    const answer = await closed!;
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect((await endHeard([task])).get(task)).toEqual([owner, applicant].map((actor) => `task.closed ${actor.userId}`).sort());
    expect(await checkBooks(db())).toEqual([]);
  });
});

describe('closing, cancelling and applying over HTTP at once', () => {
  it(raceTest('every task ends once, every applicant who got in hears it, the holds go back, beside purchases'), async () => {
    const owners = await Promise.all(Array.from({ length: 4 }, () => funded('100.00')));
    const applicants = await Promise.all(Array.from({ length: 4 }, () => funded()));
    const skills = await Promise.all(applicants.map(skillOf));
    const tasks = await Promise.all(owners.flatMap((owner) => [0, 1, 2].map(() => taskOf(owner))));
    const ownerOf = (index: number) => owners[Math.floor(index / 3)]!;
    const buyer = await funded('100.00');
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const key = randomUUID();
    const before = test.runtime.engine.transitions.batchStats();

    const [applies, ends, replays, purchases] = await Promise.all([
      Promise.all(
        tasks.flatMap((task) => applicants.map((applicant, index) => apply(applicant, task, skills[index]!).then((answer) => ({ task, applicant, answer })))),
      ),
      // Each task is ended twice: its owner twice, or its owner and the operator.
      Promise.all(tasks.flatMap((task, index) => [close(ownerOf(index), task), index % 2 === 0 ? close(ownerOf(index), task) : cancel(task)])),
      Promise.all([0, 1, 2].map(() => close(owners[0]!, tasks[0]!, key))),
      Promise.all(Array.from({ length: 8 }, () => buy(test, buyer, capability.id))),
    ]);
    expect(purchases.every((purchase) => purchase.status === 'pending_freeze' || purchase.status === 'frozen')).toBe(true);
    // Each task ended once: one 200 among its two ends and, for the first, the key sent three
    // times (its 200s one answer replayed; while the first is in flight, 4091).
    for (const [index, task] of tasks.entries()) {
      const own = [ends[2 * index]!, ends[2 * index + 1]!];
      const keyed = index === 0 ? replays.filter((answer) => answer.status === 200) : [];
      expect(new Set(keyed.map((answer) => JSON.stringify(answer.body))).size).toBeLessThanOrEqual(1);
      expect(own.filter((answer) => answer.status === 200).length + Math.min(1, keyed.length), task).toBe(1);
      expect(own.filter((answer) => answer.status !== 200).map((answer) => answer.body.code)).toEqual(
        own.filter((answer) => answer.status !== 200).map(() => 4090),
      );
    }
    expect(replays.filter((answer) => answer.status !== 200).every((answer) => [4090, 4091].includes(answer.body.code))).toBe(true);
    // An application that got in (201) was pending when its task ended: its applicant heard the end.
    const heard = await endHeard(tasks);
    for (const [index, task] of tasks.entries()) {
      const admitted = applies.filter((each) => each.task === task && each.answer.status === 201).map((each) => each.applicant.userId);
      const refused = applies.filter((each) => each.task === task && each.answer.status !== 201);
      expect(refused.every((each) => each.answer.body.code === 4090)).toBe(true);
      const type = (heard.get(task)![0] ?? '').split(' ')[0];
      expect(heard.get(task), task).toEqual([ownerOf(index).userId, ...admitted].map((user) => `${type} ${user}`).sort());
    }
    const rows = await taskRows(tasks);
    expect([...rows.values()].every((row) => ['closed', 'cancelled'].includes(row.status) && row.bounty_held === '0')).toBe(true);
    for (const owner of owners) expect(await balance(test, owner)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const after = test.runtime.engine.transitions.batchStats();
    expect(after.changes - before.changes).toBeGreaterThanOrEqual(tasks.length + purchases.length);
    if (usingRealBackends()) expect(after.batches - before.batches).toBeLessThan(after.changes - before.changes);
    expect(await checkBooks(db())).toEqual([]);
  });
});
