import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, credit } from '../helpers/market.ts';

/**
 * Bounty holds under concurrent publishes and edits (docs/decisions/money-and-escrow.md "Task money
 * and group commit"): whatever order the requests meet in, each answer says what happened to the
 * money (201/200 with the hold, or 4020 with the numbers and nothing held), each task holds exactly
 * what its ledger entries froze, no balance goes below zero and the books balance. The test is of
 * the API only, so it holds whether a hold runs in a database transaction of its own (now) or
 * shares a group commit (what the decision describes as the way to get there).
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const valid = { title: 'Proofread a paper', description: 'Twelve pages of a physics paper, English.', mode: 'online', category: 'translation' };
const minor = (amount: string) => BigInt(amount.replace('.', ''));
const db = () => test.runtime.engine.dependencies.db;

type Answer = { status: number; body: { code: number; data: Record<string, unknown> } };
interface Sent {
  publisher: Actor;
  kind: 'create' | 'publish-draft' | 'update';
  taskId?: string;
  key?: string;
  bounty: bigint;
  /** The task's hold before the request (the draft's or the open task's). */
  heldBefore: bigint;
  answer?: Answer;
}

const post = (actor: Actor, path: string, body: Record<string, unknown>, key?: string) => {
  const request = test.http.post(path).set(actor.headers);
  if (key) request.set('Idempotency-Key', key);
  return request.send(body);
};

async function publisherWith(amount: string) {
  const publisher = await createAgent(test);
  await credit(test, publisher.userId, amount);
  return publisher;
}

/** Drafts and open tasks of `publisher` written one at a time before the race, with what each holds. */
async function prepare(publisher: Actor, drafts: number, open: number) {
  const draftIds: string[] = [];
  const openIds: string[] = [];
  for (let index = 0; index < drafts; index++)
    draftIds.push((await post(publisher, '/api/v1/tasks/', { ...valid, draft: true, bounty_amount: '4.00' }).expect(201)).body.data.id as string);
  for (let index = 0; index < open; index++)
    openIds.push((await post(publisher, '/api/v1/tasks/', { ...valid, bounty_amount: '5.00' }).expect(201)).body.data.id as string);
  return { draftIds, openIds };
}

/** Every request of one publisher: creates (one key sent twice), publishes of its drafts, raises of its open tasks' bounties. */
function requestsOf(publisher: Actor, draftIds: string[], openIds: string[]): Sent[] {
  const sent: Sent[] = [];
  const repeated = randomUUID();
  for (let index = 0; index < 6; index++) sent.push({ publisher, kind: 'create', key: index < 2 ? repeated : randomUUID(), bounty: 1000n, heldBefore: 0n });
  for (const taskId of draftIds) sent.push({ publisher, kind: 'publish-draft', taskId, key: randomUUID(), bounty: 400n, heldBefore: 0n });
  for (const taskId of openIds) sent.push({ publisher, kind: 'update', taskId, bounty: 800n, heldBefore: 500n });
  return sent;
}

function send(request: Sent) {
  const { publisher, kind, taskId, key, bounty } = request;
  const amount = `${bounty / 100n}.${String(bounty % 100n).padStart(2, '0')}`;
  if (kind === 'create') return post(publisher, '/api/v1/tasks/', { ...valid, bounty_amount: amount }, key);
  if (kind === 'publish-draft') return post(publisher, `/api/v1/tasks/${taskId}/publish-draft`, { delivery_hours: 24 }, key);
  return test.http.put(`/api/v1/tasks/${taskId}`).set(publisher.headers).send({ bounty_amount: amount });
}

/** A 4020 names the currency, the publisher's available balance then, and what the request needed on top of the hold it had. */
function expectShortfall(request: Sent) {
  const { answer } = request;
  expect(answer!.body.code, JSON.stringify(answer!.body)).toBe(4020);
  expect(answer!.body.data).toMatchObject({ currency: 'UT' });
  const available = minor(answer!.body.data.available as string);
  const required = minor(answer!.body.data.required as string);
  expect(required).toBe(request.bounty - request.heldBefore);
  expect(available < required).toBe(true);
  expect(available >= 0n).toBe(true);
}

describe('bounty holds under concurrent publishes and edits', () => {
  it(raceTest('answers each request by the money, holds on each task what its entries froze, and keeps the books'), async () => {
    // Needs: 6 creates x 10.00 (one key twice: 5 tasks, 50.00) + 3 drafts x 4.00 + 3 raises x 3.00 = 71.00 beyond the 15.00 the open tasks hold.
    const rich = await publisherWith('86.00'); // exactly enough for everything
    const short = await Promise.all([publisherWith('60.00'), publisherWith('47.00'), publisherWith('41.00')]);
    const publishers = [rich, ...short];
    const sent: Sent[] = [];
    for (const publisher of publishers) {
      const { draftIds, openIds } = await prepare(publisher, 3, 3);
      sent.push(...requestsOf(publisher, draftIds, openIds));
    }
    const answers = await Promise.all(sent.map((request) => send(request)));
    answers.forEach((answer, index) => (sent[index]!.answer = answer as unknown as Answer));

    for (const request of sent) {
      const { status, body } = request.answer!;
      if (request.kind === 'create') {
        // The second use of a key is its replay, or 4091 while the first still runs.
        if (status === 409) expect(body.code).toBe(4091);
        else if (status === 402) {
          expectShortfall(request);
          expect(body.data).toMatchObject({ status: 'draft' });
        } else expect([status, body.data.status, body.data.bounty_held]).toEqual([201, 'open', '10.00']);
      } else if (request.kind === 'publish-draft') {
        if (status === 402) expectShortfall(request);
        else expect([status, body.data.status, body.data.bounty_held]).toEqual([200, 'open', '4.00']);
      } else if (status === 402) expectShortfall(request);
      else expect([status, body.data.bounty_held]).toEqual([200, '8.00']);
    }
    // The publisher with exactly enough money got everything.
    for (const request of sent.filter((one) => one.publisher === rich)) expect([201, 200, 409]).toContain(request.answer!.status);
    expect(sent.filter((one) => one.publisher === rich && one.answer!.status === 402)).toEqual([]);

    for (const publisher of publishers) {
      const mine = sent.filter((one) => one.publisher === publisher);
      // One key sent twice made one task, whichever answer each use got.
      const repeated = mine
        .filter((one) => one.key === mine[0]!.key && one.answer!.status !== 409)
        .map((one) => one.answer!.body.data.id ?? one.answer!.body.data.task_id);
      expect(new Set(repeated).size).toBe(1);
      const tasks = (await db()('tasks').where({ owner_user_id: publisher.userId }).select('id', 'status', 'bounty_amount', 'bounty_held')) as {
        id: string;
        status: string;
        bounty_amount: string;
        bounty_held: string;
      }[];
      expect(tasks.length).toBe(6 + 5);
      // An open task holds its bounty; a draft (published or kept for a shortfall) holds nothing.
      for (const task of tasks) expect(task.bounty_held).toBe(task.status === 'open' ? task.bounty_amount : '0');
      // Each answered outcome is the task's state now: an accepted raise is the bounty held, a refused one left the old.
      for (const request of mine.filter((one) => one.kind !== 'create')) {
        const task = tasks.find((row) => row.id === request.taskId)!;
        const expected = request.answer!.status === 402 ? request.heldBefore : request.bounty;
        expect(BigInt(task.bounty_held)).toBe(expected);
      }
      const held = tasks.reduce((sum, task) => sum + BigInt(task.bounty_held), 0n);
      const wallet = await balance(test, publisher);
      expect(minor(wallet.frozen)).toBe(held);
      expect(minor(wallet.available) >= 0n).toBe(true);
      expect(minor(wallet.total)).toBe(minor(wallet.available) + held);
    }
    // Someone was short: the race decided some 4020s (41.00 cannot hold 71.00 more).
    expect(sent.some((one) => one.answer!.status === 402)).toBe(true);
    expect(await checkBooks(db())).toEqual([]);
  });
});
