import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, createApiKey, linkUser, signUpHuman } from '../helpers/actors.ts';
import { pruneOld, raceTest, startTestApp, type TestApp, withBrokenBus } from '../helpers/app.ts';
import { admin, balance, credit } from '../helpers/market.ts';
import { readEvents } from '../helpers/post-stream.ts';
import { listen, openEventSource } from '../helpers/server.ts';

/**
 * The task stream, GET /api/v1/tasks/events (docs/tasks.md "Task events"), read the way its users
 * read it: a real EventSource (and a fetch reader where the test hangs up mid-stream) against a
 * listening server, with the moves made through the public API.
 */
let test: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
beforeAll(async () => {
  test = await startTestApp();
  server = await listen(test);
});
afterAll(async () => {
  await server.close();
  await test.close();
});

const taskEventTypes = [
  'task.drafted',
  'task.published',
  'task.updated',
  'task.closed',
  'task.cancelled',
  'task.expired',
  'task.matched',
  'application.submitted',
  'application.withdrawn',
  'application.rejected',
  'application.accepted',
  'too_old',
];

interface TaskEvent {
  id: string;
  type: string;
  data: {
    sequence: string;
    recipient_user_id: string;
    space: string;
    task_id: string;
    application_id: string | null;
    type: string;
    data: {
      action: string;
      previous_status: string | null;
      task: { id: string; status: string; bounty_held: string };
      application?: { id: string; status: string };
    };
  };
}

function watch(actor: Actor, lastEventId?: string) {
  const headers = lastEventId === undefined ? actor.headers : { ...actor.headers, 'Last-Event-ID': lastEventId };
  const client = openEventSource(`${server.url}/api/v1/tasks/events`, headers, taskEventTypes);
  return { ...client, received: client.received as unknown as TaskEvent[] };
}

const types = (client: { received: TaskEvent[] }) => client.received.map((event) => event.type);
const ids = (client: { received: TaskEvent[] }) => client.received.map((event) => event.id);
const ascending = (count: number, after = 0) => Array.from({ length: count }, (_, index) => String(after + index + 1));

async function fundedAgent(amount = '100.00') {
  const agent = await createAgent(test);
  await credit(test, agent.userId, amount);
  return agent;
}

const publish = async (owner: Actor, body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post('/api/v1/tasks/')
      .set(owner.headers)
      .send({ title: 'Translate a manual', description: 'Forty pages, English to Chinese', mode: 'online', category: 'translation', ...body })
      .expect(201)
  ).body.data as { id: string };
const newSkill = async (owner: Actor) =>
  (
    await test.http
      .post('/api/v1/skills/')
      .set(owner.headers)
      .send({ name: 'Translation', description: 'English and Chinese', category: 'translation' })
      .expect(201)
  ).body.data as { id: string };
const apply = async (applicant: Actor, taskId: string, body: Record<string, unknown> = {}) =>
  (
    await test.http
      .post(`/api/v1/tasks/${taskId}/applications`)
      .set(applicant.headers)
      .send({ skill_id: (await newSkill(applicant)).id, ...body })
      .expect(201)
  ).body.data as { id: string };

describe('GET /api/v1/tasks/events', () => {
  it("tells the publisher and each applicant every move that concerns them, in each one's own order", async () => {
    const [publisher, winner, loser, bystander] = [await fundedAgent(), await createAgent(test), await createAgent(test), await createAgent(test)];
    const streams = { publisher: watch(publisher), winner: watch(winner), loser: watch(loser), bystander: watch(bystander) };
    await Promise.all(Object.values(streams).map((stream) => stream.opened));

    const task = await publish(publisher, { bounty_amount: '30.00' });
    const won = await apply(winner, task.id, { proposed_price: '25.00' });
    const lost = await apply(loser, task.id);
    await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ bounty_amount: '35.00' }).expect(200);
    await test.http.post(`/api/v1/tasks/${task.id}/applications/${won.id}/accept`).set(publisher.headers).send({}).expect(200);

    await expect.poll(() => streams.publisher.received.length).toBe(7);
    await expect.poll(() => streams.loser.received.length).toBe(4);
    await expect.poll(() => streams.winner.received.length).toBe(4);
    expect(types(streams.publisher)).toEqual([
      'task.published',
      'application.submitted',
      'application.submitted',
      'task.updated',
      'task.matched',
      'application.accepted',
      'application.rejected',
    ]);
    expect(types(streams.winner)).toEqual(['application.submitted', 'task.updated', 'task.matched', 'application.accepted']);
    expect(types(streams.loser)).toEqual(['application.submitted', 'task.updated', 'task.matched', 'application.rejected']);
    for (const stream of [streams.publisher, streams.winner, streams.loser]) expect(ids(stream)).toEqual(ascending(stream.received.length));

    const rejection = streams.loser.received[3]!.data;
    expect(rejection).toMatchObject({ task_id: task.id, application_id: lost.id, space: 'agent', recipient_user_id: loser.userId });
    expect(rejection.data).toMatchObject({
      action: 'match',
      previous_status: 'pending',
      application: { id: lost.id, status: 'rejected' },
      task: { status: 'matched' },
    });
    expect(streams.winner.received[2]!.data.data).toMatchObject({
      action: 'match',
      previous_status: 'open',
      task: { id: task.id, status: 'matched', bounty_held: '0.00' },
    });
    // The bystander heard nothing; after a move of its own it hears that, numbered 1.
    expect(streams.bystander.received).toEqual([]);
    await publish(bystander);
    await expect.poll(() => ids(streams.bystander)).toEqual(['1']);
    for (const stream of Object.values(streams)) stream.close();
  });

  it('says every way a task ends, to its pending applicants too: closed, cancelled, expired', async () => {
    const publisher = await fundedAgent();
    const applicant = await createAgent(test);
    const [closing, cancelling, expiring] = [
      await publish(publisher, { bounty_amount: '5.00' }),
      await publish(publisher),
      await publish(publisher, { expires_at: new Date(test.clock.now.getTime() + 3_600_000).toISOString() }),
    ];
    for (const task of [closing, cancelling, expiring]) await apply(applicant, task.id);
    const stream = watch(applicant);
    await stream.opened;
    await test.http.post(`/api/v1/tasks/${closing.id}/close`).set(publisher.headers).send({}).expect(200);
    await test.http.post(`/api/v1/admin/tasks/${cancelling.id}/cancel`).set(admin).send({}).expect(200);
    test.clock.advanceMs(3_600_001);
    await test.runtime.engine.sweeper.runOnce();
    // Each end, then the applicant's pending application ending with it (rejected, the end as its action).
    await expect
      .poll(() => types(stream))
      .toEqual(['task.closed', 'application.rejected', 'task.cancelled', 'application.rejected', 'task.expired', 'application.rejected']);
    expect(stream.received.map((event) => [event.data.task_id, event.data.data.previous_status, event.data.data.task.status])).toEqual([
      [closing.id, 'open', 'closed'],
      [closing.id, 'pending', 'closed'],
      [cancelling.id, 'open', 'cancelled'],
      [cancelling.id, 'pending', 'cancelled'],
      [expiring.id, 'open', 'expired'],
      [expiring.id, 'pending', 'expired'],
    ]);
    const ended = stream.received.filter((event) => event.type === 'application.rejected');
    expect(ended.map((event) => [event.data.data.action, event.data.data.application?.status])).toEqual([
      ['close', 'rejected'],
      ['cancel', 'rejected'],
      ['expire', 'rejected'],
    ]);
    stream.close();
  });

  it('tells of drafts, publishing a draft, a withdrawal and a rejection', async () => {
    const publisher = await createAgent(test);
    const applicant = await createAgent(test);
    const stream = watch(publisher);
    await stream.opened;
    const draft = await publish(publisher, { draft: true });
    // Too little money: the task is stored as a draft (4020), which is the stream's news too.
    const short = (
      await test.http
        .post('/api/v1/tasks/')
        .set(publisher.headers)
        .send({ title: 'Logo', description: 'A logo', mode: 'online', bounty_amount: '9.00' })
        .expect(402)
    ).body.data;
    await test.http.post(`/api/v1/tasks/${draft.id}/publish-draft`).set(publisher.headers).send({ delivery_hours: 24 }).expect(200);
    const first = await apply(applicant, draft.id);
    const second = await apply(applicant, draft.id);
    await test.http.delete(`/api/v1/tasks/${draft.id}/applications/${first.id}`).set(applicant.headers).expect(200);
    await test.http.post(`/api/v1/tasks/${draft.id}/applications/${second.id}/reject`).set(publisher.headers).send({}).expect(200);
    await expect
      .poll(() => types(stream))
      .toEqual([
        'task.drafted',
        'task.drafted',
        'task.published',
        'application.submitted',
        'application.submitted',
        'application.withdrawn',
        'application.rejected',
      ]);
    expect(stream.received[1]!.data.task_id).toBe(short.task_id);
    expect(stream.received[2]!.data.data).toMatchObject({ action: 'publish', previous_status: 'draft', task: { status: 'open' } });
    expect(stream.received[5]!.data.data).toMatchObject({ action: 'withdraw', previous_status: 'pending', application: { id: first.id, status: 'withdrawn' } });
    stream.close();
  });

  it('says nothing of a move that was refused: no event, no money moved', async () => {
    const publisher = await fundedAgent('10.00');
    const applicant = await createAgent(test);
    const task = await publish(publisher, { bounty_amount: '10.00' });
    const dear = await apply(applicant, task.id, { proposed_price: '50.00' });
    const stream = watch(publisher);
    await stream.opened;
    expect((await test.http.post(`/api/v1/tasks/${task.id}/applications/${dear.id}/accept`).set(publisher.headers).send({}).expect(409)).body.code).toBe(4093);
    expect(
      (await test.http.post(`/api/v1/tasks/${task.id}/applications/${dear.id}/accept`).set(publisher.headers).send({ max_price: '50.00' }).expect(402)).body
        .code,
    ).toBe(4020);
    expect(
      (await test.http.post(`/api/v1/tasks/${task.id}/applications/${dear.id}/accept`).set(publisher.headers).send({ max_price: '20.00' }).expect(409)).body
        .code,
    ).toBe(4093);
    expect((await test.http.put(`/api/v1/tasks/${task.id}`).set(publisher.headers).send({ bounty_amount: '99.00' }).expect(402)).body.code).toBe(4020);
    // A move that did happen afterwards is the first thing the stream carries.
    await test.http.post(`/api/v1/tasks/${task.id}/close`).set(publisher.headers).send({}).expect(200);
    await expect.poll(() => types(stream)).toEqual(['task.closed', 'application.rejected']);
    expect(await balance(test, publisher)).toMatchObject({ available: '10.00', frozen: '0.00' });
    stream.close();
  });

  it(raceTest('numbers a stream without gaps or repeats while many moves for the same people commit at once'), async () => {
    const publisher = await fundedAgent();
    const applicants = await Promise.all(Array.from({ length: 12 }, () => createAgent(test)));
    const tasks = [await publish(publisher), await publish(publisher)];
    const stream = watch(publisher, '2');
    await stream.opened;
    // Every applicant applies to both tasks at once: 24 moves, each heard by the publisher.
    const applied = await Promise.all(applicants.flatMap((applicant) => tasks.map((task) => apply(applicant, task.id))));
    await expect.poll(() => stream.received.length).toBe(24);
    expect(ids(stream)).toEqual(ascending(24, 2));
    expect(new Set(stream.received.map((event) => event.data.application_id))).toEqual(new Set(applied.map((application) => application.id)));
    // Both tasks close at once: each applicant hears each close and its application's end once, in its own numbering.
    const watched = applicants.slice(0, 3).map((applicant) => watch(applicant, '2'));
    await Promise.all(watched.map((client) => client.opened));
    await Promise.all(tasks.map((task) => test.http.post(`/api/v1/tasks/${task.id}/close`).set(publisher.headers).send({}).expect(200)));
    for (const client of watched) {
      await expect.poll(() => ids(client)).toEqual(['3', '4', '5', '6']);
      expect(new Set(client.received.map((event) => event.data.task_id))).toEqual(new Set(tasks.map((task) => task.id)));
      client.close();
    }
    stream.close();
  });

  it('resumes after Last-Event-ID (header or query) with nothing missed and nothing repeated', async () => {
    const publisher = await fundedAgent();
    const applicant = await createAgent(test);
    const task = await publish(publisher);
    await apply(applicant, task.id);
    await apply(applicant, task.id);
    const resumed = watch(publisher, '1');
    await resumed.opened;
    await test.http.post(`/api/v1/tasks/${task.id}/close`).set(publisher.headers).send({}).expect(200);
    await expect.poll(() => ids(resumed)).toEqual(['2', '3', '4', '5', '6']);
    expect(types(resumed)).toEqual(['application.submitted', 'application.submitted', 'task.closed', 'application.rejected', 'application.rejected']);
    resumed.close();
    const byQuery = openEventSource(`${server.url}/api/v1/tasks/events?last_event_id=3`, publisher.headers, taskEventTypes);
    await expect.poll(() => byQuery.received.map((event) => event.id)).toEqual(['4', '5', '6']);
    byQuery.close();
  });

  it("keeps the two spaces apart: one person's agent credentials never hear their human tasks, nor the other way round", async () => {
    const person = await signUpHuman(test);
    const key = await createApiKey(test);
    await linkUser(test, key.id, person.userId);
    const asAgent: Actor = { userId: person.userId, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': person.userId } };
    const [agentStream, humanStream] = [watch(asAgent), watch(person)];
    await Promise.all([agentStream.opened, humanStream.opened]);
    const agentTask = await publish(asAgent);
    const humanTask = await publish(person);
    await expect.poll(() => agentStream.received.map((event) => event.data.task_id)).toEqual([agentTask.id]);
    await expect.poll(() => humanStream.received.map((event) => event.data.task_id)).toEqual([humanTask.id]);
    // One numbering per person: each space's stream skips the other's positions.
    expect([agentStream.received[0]!.id, humanStream.received[0]!.id]).toEqual(['1', '2']);
    expect(humanStream.received[0]!.data.space).toBe('human');
    for (const stream of [agentStream, humanStream]) stream.close();
  });

  it('fills a lost live message from the database, and the relay publishes what a crash left unpublished', async () => {
    const publisher = await fundedAgent();
    const stream = watch(publisher);
    await stream.opened;
    const lost = await withBrokenBus(test, 'lose', () => publish(publisher));
    const unpublished = await withBrokenBus(test, 'fail', () => publish(publisher));
    // The next live event shows the gap, which is read from the table.
    const third = await publish(publisher);
    await expect.poll(() => stream.received.map((event) => event.data.task_id)).toEqual([lost.id, unpublished.id, third.id]);
    test.clock.advanceMs(5_000);
    expect(await test.runtime.engine.relay.runOnce()).toBeGreaterThanOrEqual(1);
    const left = await test.runtime.engine.dependencies
      .db('unpublished_events as queued')
      .join('task_events as event', 'event.id', 'queued.event_id')
      .where({ 'queued.feed': 'task_events', 'event.recipient_user_id': publisher.userId })
      .count<{ count: string }[]>('* as count');
    expect(Number(left[0]!.count)).toBe(0);
    stream.close();
  });

  it('lets a client hang up mid-stream: its place is freed, and it resumes where it stopped', async () => {
    const publisher = await fundedAgent();
    const streamsOpen = () => test.runtime.engine.admission.sseStreams.openTotal;
    const before = streamsOpen();
    const abort = new AbortController();
    const response = await fetch(`${server.url}/api/v1/tasks/events`, { headers: publisher.headers, signal: abort.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = readEvents(response);
    await publish(publisher);
    const first = (await frames.next()).value!;
    expect(first).toMatchObject({ id: '1', event: 'task.published' });
    expect(streamsOpen()).toBe(before + 1);
    abort.abort();
    await expect.poll(streamsOpen).toBe(before);
    const whileAway = await publish(publisher);
    const resumed = watch(publisher, first.id);
    await expect.poll(() => resumed.received.map((event) => [event.id, event.data.task_id])).toEqual([['2', whileAway.id]]);
    resumed.close();
  });

  it('refuses no credentials, mixed credentials and a malformed Last-Event-ID with the envelope', async () => {
    const agent = await createAgent(test);
    const human = await signUpHuman(test);
    expect((await test.http.get('/api/v1/tasks/events').expect(401)).body.code).toBe(4010);
    expect(
      (
        await test.http
          .get('/api/v1/tasks/events')
          .set({ ...agent.headers, ...human.headers })
          .expect(400)
      ).body.code,
    ).toBe(4011);
    expect((await test.http.get('/api/v1/tasks/events').set(agent.headers).set('Last-Event-ID', 'abc').expect(400)).body.code).toBe(4000);
    expect((await test.http.get('/api/v1/tasks/events?last_event_id=-1').set(agent.headers).expect(400)).body.code).toBe(4000);
  });
});

describe('task events past the retention window', () => {
  it('are deleted by the retention job, and a stream resumed before them is told too_old and goes on', async () => {
    const publisher = await fundedAgent();
    await publish(publisher);
    await publish(publisher);
    // Only published rows are deleted (the relay still owes the others): wait for the queue to empty.
    const unpublished = async () => {
      await test.runtime.engine.tasks.events.flush();
      const [row] = await test.runtime.engine.dependencies
        .db('unpublished_events as queued')
        .join('task_events as event', 'event.id', 'queued.event_id')
        .where({ 'queued.feed': 'task_events', 'event.recipient_user_id': publisher.userId })
        .count<{ count: string }[]>('* as count');
      return Number(row!.count);
    };
    await expect.poll(unpublished).toBe(0);
    test.clock.advanceMs((test.config.OUTBOX_RETENTION_HOURS + 1) * 3_600_000);
    expect((await pruneOld(test)).taskEvents).toBeGreaterThanOrEqual(2);
    const resumed = watch(publisher, '0');
    await expect.poll(() => types(resumed)).toEqual(['too_old']);
    expect(resumed.received[0]).toMatchObject({ id: '2', data: { code: 'too_old', requested_after: '0', resumed_after: '2', current_state: '/api/v1/tasks' } });
    const later = await publish(publisher);
    await expect.poll(() => resumed.received.map((event) => event.id)).toEqual(['2', '3']);
    expect(resumed.received[1]!.data.task_id).toBe(later.id);
    resumed.close();
  });
});
