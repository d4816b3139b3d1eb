import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { candidatesOf, hex, rpcCaller, textOf, v01Text, v03Text, v10Details, v10Text } from '../helpers/a2a.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { act, balance, createCapability, credit } from '../helpers/market.ts';
import { rpcStreamResults } from '../helpers/rpc-stream.ts';
import { listen } from '../helpers/server.ts';

/**
 * The market over A2A (docs/decisions/a2a.md, the "Conversations" sections): a text-only
 * message is a demand answered with candidates; a follow-up picks, rewords, confirms or disputes
 * in words; an instant per_query capability answers a blocking send in one call. One app for the
 * file; each test has its own seller offering capabilities about a topic word of its own, so the
 * candidates it expects rank first whatever the other tests offer.
 */
let test: TestApp;
let endpoint: string;
let closeServer: () => Promise<void>;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  const server = await listen(test);
  endpoint = `${server.url}/api/v1/rpc`;
  closeServer = server.close;
  rpc = rpcCaller(test);
});
afterAll(async () => {
  await closeServer();
  await test.close();
  await callbacks.close();
});

type Json = Record<string, any>;

/** A funded buyer and a seller offering a translation and a summary about a topic word of their own. */
async function market() {
  const topic = `topic${randomBytes(3).toString('hex')}`;
  const buyer = await createAgent(test);
  const seller = await createAgent(test);
  await credit(test, buyer.userId, '100.00');
  const translation = await createCapability(test, seller, {
    title: `Translate ${topic} PDF documents from German to English`,
    description: `German to English translation of ${topic} files`,
    price_ut: '12.00',
  });
  const summary = await createCapability(test, seller, {
    title: `Summarize ${topic} reports`,
    description: `Short summaries of long ${topic} reports`,
    price_ut: '5.00',
  });
  return { topic, buyer, seller, translation, summary };
}

const numberOf = (task: Json, capabilityId: string) =>
  candidatesOf(task).candidates.find((candidate) => candidate.capability_id === capabilityId)!.number as number;

async function transactionsOf(actor: Actor) {
  return (await test.http.get('/api/v1/transactions').set(actor.headers).expect(200)).body.data as { total: number; items: Json[] };
}

describe('a conversation over A2A v1.0 (SendMessage)', () => {
  it('answers text with candidates, creates nothing until a pick by number buys under the same task id, and confirms in words', async () => {
    const { topic, buyer, seller, translation } = await market();
    const started = (
      await rpc.ok(buyer, 'SendMessage', v10Text(`Please translate my ${topic} PDF from German to English`, { contextId: 'my chat about PDFs' }))
    ).task;
    expect(started).toMatchObject({ status: { state: 'TASK_STATE_INPUT_REQUIRED', message: { role: 'ROLE_AGENT' } }, contextId: 'my chat about PDFs' });
    const offer = candidatesOf(started);
    expect(offer.candidates[0]).toMatchObject({ number: 1, capability_id: translation.id, price: '12.00', currency: 'UT', pricing_model: 'per_use' });
    expect(textOf(started)).toContain(`1. Translate ${topic} PDF documents from German to English — 12.00 UT`);
    expect(textOf(started)).toContain('Reply with a number or a capability id to buy');
    expect(started.metadata.marketplace).toMatchObject({ conversation_id: started.id, demand_id: offer.demand_id, transaction_id: null, status: 'choosing' });

    // Nothing bought yet: no transaction, no money moved; the demand is the buyer's, over REST too.
    expect((await transactionsOf(buyer)).total).toBe(0);
    expect(await balance(test, buyer)).toMatchObject({ available: '100.00', frozen: '0.00' });
    const demand = (await test.http.get(`/api/v1/demands/${offer.demand_id}`).set(buyer.headers).expect(200)).body.data;
    expect(demand).toMatchObject({ user_id: buyer.userId, status: 'open', description: `Please translate my ${topic} PDF from German to English` });

    const picked = (await rpc.ok(buyer, 'SendMessage', v10Text(String(numberOf(started, translation.id)), { taskId: started.id }))).task;
    expect(picked).toMatchObject({ id: started.id, contextId: 'my chat about PDFs', status: { state: 'TASK_STATE_SUBMITTED' } });
    const transactionId = picked.metadata.marketplace.transaction_id as string;
    expect(picked.metadata.marketplace).toMatchObject({
      conversation_id: started.id,
      status: 'frozen',
      demand_id: offer.demand_id,
      capability_id: translation.id,
    });
    const overRest = (await test.http.get(`/api/v1/transactions/${transactionId}`).set(buyer.headers).expect(200)).body.data;
    expect(overRest).toMatchObject({ demand_id: offer.demand_id, status: 'frozen', price_ut: '12.00', note: demand.description });
    expect((await test.http.get(`/api/v1/demands/${offer.demand_id}`).set(buyer.headers).expect(200)).body.data).toMatchObject({
      status: 'fulfilled',
      transaction_id: transactionId,
    });
    expect(await balance(test, buyer)).toMatchObject({ available: '88.00', frozen: '12.00' });

    // Either id names the task; the seller delivers over REST.
    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { english: 'done' } }).expect(200);
    const byConversation = await rpc.ok(buyer, 'GetTask', { id: started.id });
    const byTransaction = await rpc.ok(buyer, 'GetTask', { id: transactionId });
    expect(byConversation).toMatchObject({
      id: started.id,
      status: { state: 'TASK_STATE_INPUT_REQUIRED' },
      artifacts: [{ parts: [{ data: { english: 'done' } }] }],
    });
    expect(byTransaction).toMatchObject({ id: transactionId, contextId: 'my chat about PDFs', status: { state: 'TASK_STATE_INPUT_REQUIRED' } });

    const confirmed = (await rpc.ok(buyer, 'SendMessage', v10Text('Confirm', { taskId: started.id }))).task;
    expect(confirmed).toMatchObject({ id: started.id, status: { state: 'TASK_STATE_COMPLETED' }, metadata: { marketplace: { status: 'settled' } } });
    expect(await balance(test, buyer)).toMatchObject({ available: '88.00', frozen: '0.00' });
    expect((await transactionsOf(buyer)).total).toBe(1);
  });

  it('answers working with the demand open when nothing matches; other words match again, none keeps it working', async () => {
    const { topic, buyer, summary } = await market();
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`a sonnet about ${hex()}`))).task;
    expect(started).toMatchObject({ status: { state: 'TASK_STATE_WORKING' }, metadata: { marketplace: { status: 'open', transaction_id: null } } });
    expect(candidatesOf(started).candidates).toEqual([]);
    expect(textOf(started)).toContain('Nothing offered matches this yet. Your demand is open');
    // A data part that names neither a capability nor an action rides along with the words, kept in the history.
    const withContext = {
      message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: started.id, parts: [{ text: `a haiku about ${hex()}` }, { data: { mood: 'calm' } }] },
    };
    const stillNothing = (await rpc.ok(buyer, 'SendMessage', { ...withContext, configuration: { historyLength: 2 } })).task;
    expect(stillNothing).toMatchObject({ id: started.id, status: { state: 'TASK_STATE_WORKING' }, metadata: { marketplace: { status: 'open' } } });
    expect(stillNothing.history[0]).toMatchObject({ role: 'ROLE_USER', parts: [{ text: expect.stringContaining('haiku') }, { data: { mood: 'calm' } }] });
    const refined = (await rpc.ok(buyer, 'SendMessage', v10Text(`Summaries of my ${topic} reports`, { taskId: started.id }))).task;
    expect(refined).toMatchObject({ id: started.id, status: { state: 'TASK_STATE_INPUT_REQUIRED' }, metadata: { marketplace: { status: 'choosing' } } });
    expect(candidatesOf(refined).candidates[0]).toMatchObject({ number: 1, capability_id: summary.id });
    const demand = (
      await test.http
        .get(`/api/v1/demands/${candidatesOf(refined).demand_id}`)
        .set(buyer.headers)
        .expect(200)
    ).body.data;
    expect(demand).toMatchObject({ status: 'open', description: `Summaries of my ${topic} reports` });
    expect((await transactionsOf(buyer)).total).toBe(0);
  });

  it('refuses a number that names no candidate, and an action before anything was bought', async () => {
    const { topic, buyer } = await market();
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`${topic} reports summarized`))).task;
    const count = candidatesOf(started).candidates.length;
    expect((await rpc.call(buyer, 'SendMessage', v10Text(String(count + 1), { taskId: started.id }))).error).toMatchObject({
      code: -32602,
      data: { code: 4000 },
    });
    const early = await rpc.call(buyer, 'SendMessage', {
      message: { messageId: randomUUID(), role: 'ROLE_USER', taskId: started.id, parts: [{ data: { action: 'confirm' } }] },
    });
    expect(early.error).toMatchObject({ code: -32190, data: { code: 4090 } });
  });
});

describe('a pick without the money', () => {
  it("reports the failed freeze with the conversation's task, and freezes the same purchase when the pick is sent again after a top-up", async () => {
    const { topic, translation } = await market();
    const poor = await createAgent(test);
    const started = (await rpc.ok(poor, 'SendMessage', v10Text(`translate ${topic} PDF documents`))).task;
    const pick = String(numberOf(started, translation.id));
    const refused = await rpc.call(poor, 'SendMessage', v10Text(pick, { taskId: started.id }));
    expect(refused.error).toMatchObject({ code: -32120, data: { code: 4020, task_id: started.id, status: 'pending_freeze' } });
    expect((await rpc.ok(poor, 'GetTask', { id: started.id })).metadata.marketplace).toMatchObject({ status: 'pending_freeze', conversation_id: started.id });
    await credit(test, poor.userId, '20.00');
    const frozen = (await rpc.ok(poor, 'SendMessage', v10Text(pick, { taskId: started.id }))).task;
    expect(frozen).toMatchObject({
      id: started.id,
      status: { state: 'TASK_STATE_SUBMITTED' },
      metadata: { marketplace: { status: 'frozen', transaction_id: refused.error!.data!.transaction_id } },
    });
    expect((await transactionsOf(poor)).total).toBe(1);
    expect(await balance(test, poor)).toMatchObject({ available: '8.00', frozen: '12.00' });
  });
});

describe('a conversation over A2A v0.3 (message/send) and v0.1 (tasks/send)', () => {
  it('v0.3: picks by capability id, and disputes in words with a reason', async () => {
    const { topic, buyer, seller, summary } = await market();
    const started = await rpc.ok(buyer, 'message/send', v03Text(`I want ${topic} reports summarized and translated`));
    expect(started).toMatchObject({ kind: 'task', status: { state: 'input-required' } });
    const picked = await rpc.ok(buyer, 'message/send', v03Text(`take ${summary.id}`, { taskId: started.id }));
    const transactionId = picked.metadata.marketplace.transaction_id;
    expect(picked).toMatchObject({ id: started.id, status: { state: 'submitted' }, metadata: { marketplace: { capability_id: summary.id } } });
    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { summary: 'short' } }).expect(200);
    const disputed = await rpc.ok(buyer, 'message/send', v03Text('dispute: the summary misses the second half', { taskId: started.id }));
    expect(disputed).toMatchObject({
      id: started.id,
      status: { state: 'working' },
      metadata: { marketplace: { status: 'disputed', dispute_reason: 'the summary misses the second half' } },
    });
    expect((await test.http.get(`/api/v1/transactions/${transactionId}`).set(buyer.headers).expect(200)).body.data.status).toBe('disputed');
  });

  it('v0.1: a samples-style session (uuid4().hex ids) starts, rewords and picks under one task id, echoing the sessionId', async () => {
    const { topic, buyer, translation } = await market();
    const [taskId, sessionId] = [hex(), hex()];
    const started = await rpc.ok(buyer, 'tasks/send', v01Text(taskId, sessionId, `a limerick about ${hex()}`));
    expect(started).toMatchObject({
      id: taskId,
      sessionId,
      status: { state: 'working', message: { role: 'agent', parts: [{ type: 'text' }, { type: 'data' }] } },
    });
    const refined = await rpc.ok(buyer, 'tasks/send', v01Text(taskId, sessionId, `translate ${topic} PDF documents`));
    expect(candidatesOf(refined).candidates[0]!.capability_id).toBe(translation.id);
    const picked = await rpc.ok(buyer, 'tasks/send', v01Text(taskId, sessionId, `#${numberOf(refined, translation.id)}`));
    expect(picked).toMatchObject({
      id: taskId,
      sessionId,
      status: { state: 'submitted' },
      metadata: { marketplace: { client_task_id: taskId, capability_id: translation.id } },
    });
    expect(await rpc.ok(buyer, 'tasks/get', { id: taskId })).toMatchObject({ id: taskId, sessionId, contextId: sessionId, status: { state: 'submitted' } });
  });
});

describe('cancelling a conversation, and who may touch it', () => {
  it('cancels a conversation and its demand before a pick; again is -32002, and a later pick is refused', async () => {
    const { topic, buyer } = await market();
    const started = await rpc.ok(buyer, 'message/send', v03Text(`${topic} PDF translation`));
    const cancelled = await rpc.ok(buyer, 'tasks/cancel', { id: started.id });
    expect(cancelled).toMatchObject({
      id: started.id,
      status: { state: 'canceled' },
      metadata: { marketplace: { status: 'cancelled', transaction_id: null } },
    });
    const demandId = cancelled.metadata.marketplace.demand_id;
    expect((await test.http.get(`/api/v1/demands/${demandId}`).set(buyer.headers).expect(200)).body.data.status).toBe('cancelled');
    expect((await rpc.call(buyer, 'CancelTask', { id: started.id })).error).toMatchObject({ code: -32002, data: v10Details('TASK_NOT_CANCELABLE', 4090) });
    expect((await rpc.call(buyer, 'message/send', v03Text('1', { taskId: started.id }))).error).toMatchObject({ code: -32190 });
    expect((await transactionsOf(buyer)).total).toBe(0);
  });

  it('cancels an open conversation (working, nothing matched) with its demand; again is -32002', async () => {
    const { buyer } = await market();
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`an ode about ${hex()}`))).task;
    expect(started.status.state).toBe('TASK_STATE_WORKING');
    const cancelled = await rpc.ok(buyer, 'CancelTask', { id: started.id });
    expect(cancelled).toMatchObject({ id: started.id, status: { state: 'TASK_STATE_CANCELED' }, metadata: { marketplace: { status: 'cancelled' } } });
    expect((await test.http.get(`/api/v1/demands/${cancelled.metadata.marketplace.demand_id}`).set(buyer.headers).expect(200)).body.data.status).toBe(
      'cancelled',
    );
    expect((await rpc.call(buyer, 'CancelTask', { id: started.id })).error).toMatchObject({ code: -32002, data: v10Details('TASK_NOT_CANCELABLE', 4090) });
  });

  it('hides a conversation from everyone else (-32001), and refuses calls without credentials', async () => {
    const { topic, buyer } = await market();
    const other = await createAgent(test);
    const person = await signUpHuman(test);
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`${topic} reports`))).task;
    const missing = await rpc.call(other, 'GetTask', { id: randomUUID() });
    expect(missing.error).toMatchObject({ code: -32001, data: v10Details('TASK_NOT_FOUND', 4040) });
    expect((await rpc.call(other, 'GetTask', { id: started.id })).error).toEqual(missing.error);
    expect((await rpc.call(other, 'CancelTask', { id: started.id })).error).toEqual(missing.error);
    expect((await rpc.call(other, 'SendMessage', v10Text('1', { taskId: started.id }))).error).toEqual(missing.error);
    // The shared name without A2A-Version answers in the older shape: the same envelope, in data itself.
    const missingShared = (await rpc.call(other, 'tasks/get', { id: randomUUID() })).error;
    expect(missingShared).toMatchObject({ code: -32001, data: { code: 4040 } });
    expect((await rpc.call(person, 'tasks/get', { id: started.id })).error).toEqual(missingShared);
    const anonymous = await test.http
      .post('/api/v1/rpc')
      .send({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: v10Text('anything') })
      .expect(401);
    expect(anonymous.body.error).toMatchObject({ code: -32110, data: { code: 4010 } });
    expect((await rpc.ok(buyer, 'GetTask', { id: started.id })).status.state).toBe('TASK_STATE_INPUT_REQUIRED');
  });
});

describe('streams and money', () => {
  it('streams a conversation: one task event at input-required; a streamed pick follows the purchase to delivery', async () => {
    const { topic, buyer, seller, translation } = await market();
    const [only, ...none] = await rpcStreamResults(endpoint, buyer, 'SendStreamingMessage', v10Text(`translate ${topic} PDF documents`));
    expect(none).toEqual([]);
    expect(only!.task).toMatchObject({ status: { state: 'TASK_STATE_INPUT_REQUIRED' }, history: [{ role: 'ROLE_USER' }, { role: 'ROLE_AGENT' }] });
    const conversationId = only!.task.id;
    const streamed = rpcStreamResults(endpoint, buyer, 'message/stream', v03Text(String(numberOf(only!.task, translation.id)), { taskId: conversationId }));
    const transactionId = await waitForTransaction(buyer);
    await act(test, seller, transactionId, 'accept').expect(200);
    await act(test, seller, transactionId, 'deliver', { result_payload: { english: 'streamed' } }).expect(200);
    const events = await streamed;
    expect(events[0]).toMatchObject({ kind: 'task', id: conversationId, status: { state: 'submitted' } });
    expect(events.at(-1)).toMatchObject({ kind: 'status-update', taskId: conversationId, status: { state: 'input-required' }, final: true });
    expect(events.some((event) => event.kind === 'artifact-update' && event.artifact.parts[0].data.english === 'streamed')).toBe(true);
  });

  it(raceTest('buys once when the same pick arrives many times at once'), async () => {
    const { topic, buyer, translation } = await market();
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`translate ${topic} PDF documents`))).task;
    const pick = String(numberOf(started, translation.id));
    const resent = v10Text(pick, { taskId: started.id });
    const answers = await Promise.all([
      ...Array.from({ length: 3 }, () => rpc.call(buyer, 'SendMessage', resent)),
      ...Array.from({ length: 3 }, () => rpc.call(buyer, 'SendMessage', v10Text(pick, { taskId: started.id }))),
    ]);
    const transactionIds = new Set(answers.map((answer) => answer.result?.task.metadata.marketplace.transaction_id));
    expect(answers.map((answer) => answer.error)).toEqual(answers.map(() => undefined));
    expect(transactionIds.size).toBe(1);
    expect((await transactionsOf(buyer)).total).toBe(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '88.00', frozen: '12.00' });
  });
});

/** The buyer's one transaction, once a streamed pick has created it. */
async function waitForTransaction(buyer: Actor): Promise<string> {
  for (;;) {
    const { items } = await transactionsOf(buyer);
    if (items[0]?.status === 'frozen') return items[0].id;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('an instant per_query capability', () => {
  async function instantMarket(path: string, overrides: Record<string, unknown> = {}) {
    const buyer = await createAgent(test);
    const seller = await createAgent(test);
    await credit(test, buyer.userId, '10.00');
    const capability = await createCapability(test, seller, { pricing_model: 'per_query', price_ut: '2.00', callback_url: callbacks.url(path), ...overrides });
    return { buyer, seller, capability };
  }

  it('answers a blocking send with the completed task and the result as an artifact, in every generation', async () => {
    const { buyer, capability } = await instantMarket('/ok');
    const v10 = (
      await rpc.ok(buyer, 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id, input: { q: 'v1' } } }] },
      })
    ).task;
    expect(v10).toMatchObject({
      status: { state: 'TASK_STATE_COMPLETED' },
      artifacts: [{ parts: [{ data: { echo: { q: 'v1' }, answered: true } }] }],
      metadata: { marketplace: { status: 'settled' } },
    });
    const v03 = await rpc.ok(buyer, 'message/send', {
      message: {
        kind: 'message',
        messageId: randomUUID(),
        role: 'user',
        parts: [{ kind: 'data', data: { capability_id: capability.id, input: { q: 'v3' } } }],
      },
    });
    expect(v03).toMatchObject({ status: { state: 'completed' }, artifacts: [{ parts: [{ kind: 'data', data: { echo: { q: 'v3' } } }] }] });
    const taskId = hex();
    const v01 = await rpc.ok(buyer, 'tasks/send', {
      id: taskId,
      message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id, input: { q: 'v0.1' } } }] },
    });
    expect(v01).toMatchObject({ id: taskId, status: { state: 'completed' }, artifacts: [{ parts: [{ type: 'data', data: { echo: { q: 'v0.1' } } }] }] });
    expect(await balance(test, buyer)).toMatchObject({ available: '4.00', frozen: '0.00' });
  });

  it('answers a non-blocking send at once, and streams the states of a streamed one', async () => {
    const { buyer, capability } = await instantMarket('/gate?gate=a2a-instant');
    const early = (
      await rpc.ok(buyer, 'SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id } }] },
        configuration: { returnImmediately: true },
      })
    ).task;
    expect(early.status.state).toBe('TASK_STATE_SUBMITTED');
    while (!callbacks.gateReached('a2a-instant')) await new Promise((resolve) => setTimeout(resolve, 20));
    callbacks.openGate('a2a-instant');
    let read = await rpc.ok(buyer, 'GetTask', { id: early.id });
    while (read.status.state === 'TASK_STATE_SUBMITTED') read = await rpc.ok(buyer, 'GetTask', { id: early.id });
    expect(read).toMatchObject({ status: { state: 'TASK_STATE_COMPLETED' }, artifacts: [{ parts: [{ data: { late: true } }] }] });

    const { buyer: streamer, capability: streamed } = await instantMarket('/ok');
    const events = await rpcStreamResults(endpoint, streamer, 'message/stream', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: streamed.id } }] },
    });
    expect(events[0]).toMatchObject({ kind: 'task' });
    expect(events.at(-1)).toMatchObject({ kind: 'status-update', status: { state: 'completed' }, final: true });
    expect(events.some((event) => event.kind === 'artifact-update' && event.artifact.parts[0].data.answered === true)).toBe(true);
  });

  it('picks an instant capability in a conversation: the invoke gets the words as input.text', async () => {
    const topic = `topic${randomBytes(3).toString('hex')}`;
    const { buyer, capability } = await instantMarket('/ok', { title: `Answer ${topic} questions` });
    const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`${topic} questions answered`))).task;
    const done = (await rpc.ok(buyer, 'SendMessage', v10Text(`buy ${capability.id}`, { taskId: started.id }))).task;
    expect(done).toMatchObject({
      id: started.id,
      status: { state: 'TASK_STATE_COMPLETED' },
      artifacts: [{ parts: [{ data: { echo: { text: `${topic} questions answered` } } }] }],
    });
  });
});
