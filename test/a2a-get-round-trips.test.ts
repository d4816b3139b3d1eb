import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCaller, v03Text } from './helpers/a2a.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { agentMarket, createCapability } from './helpers/market.ts';

/**
 * `tasks/get` and `GetTask` answer with one database round trip (issue 15, point 10): the
 * conversation, the client task id, the transaction, the task row and its messages are read by
 * one statement (store/a2a.ts findTask), not four or five in turn. Measured from outside the
 * engine: the database connections the pool hands out while one request is answered, compared
 * with `GET /transactions/{id}` (one SELECT) in the same app.
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
let checkouts = 0;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
  const client = test.runtime.engine.dependencies.db.client as { acquireConnection: (...args: unknown[]) => Promise<unknown> };
  const acquire = client.acquireConnection.bind(client);
  client.acquireConnection = (...args: unknown[]) => {
    checkouts += 1;
    return acquire(...args);
  };
});
afterAll(() => test.close());

/** The connections taken while `work` runs (each statement outside a transaction takes one). */
async function roundTrips(work: () => Promise<unknown>): Promise<number> {
  const before = checkouts;
  await work();
  return checkouts - before;
}

describe('reading a task', () => {
  it('costs one round trip, as reading the transaction over REST does, by any name the task has', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const clientTaskId = `client-${randomUUID()}`;
    const bought = await rpc.ok(buyer, 'message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] } });
    const legacy = await rpc.ok(buyer, 'tasks/send', { id: clientTaskId, sessionId: randomUUID(), message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] } });
    await createCapability(test, seller, { title: 'Translate contracts into Chinese', description: 'Legal translation', category: 'translation' });
    const conversation = await rpc.ok(buyer, 'message/send', v03Text('Translate a contract into Chinese'));

    const rest = await roundTrips(() => test.http.get(`/api/v1/transactions/${bought.id}`).set(buyer.headers).expect(200));
    expect(rest).toBeGreaterThanOrEqual(1);
    for (const [method, id] of [['tasks/get', bought.id], ['GetTask', bought.id], ['tasks/get', clientTaskId], ['GetTask', conversation.id]] as const) {
      let answer: Record<string, unknown> | undefined;
      expect(await roundTrips(async () => (answer = await rpc.ok(buyer, method, { id })))).toBe(rest);
      expect(answer!.id).toBe(id === clientTaskId ? legacy.id : id);
    }
    // The seller reads the purchase too (without the buyer's messages), at the same cost.
    expect(await roundTrips(() => rpc.ok(seller, 'tasks/get', { id: bought.id }))).toBe(rest);
  });

  it('answers -32001 for a task of someone else, at the same cost', async () => {
    const { buyer, capability } = await agentMarket(test);
    const { buyer: stranger } = await agentMarket(test);
    const bought = await rpc.ok(buyer, 'message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] } });
    // A caller's first request also loads who it is; the comparison starts after it.
    await test.http.get('/api/v1/wallet/').set(stranger.headers).expect(200);
    const rest = await roundTrips(() => test.http.get(`/api/v1/transactions/${bought.id}`).set(stranger.headers).expect(404));
    expect(await roundTrips(async () => expect((await rpc.call(stranger, 'tasks/get', { id: bought.id })).error?.code).toBe(-32001))).toBe(rest);
    expect(await roundTrips(async () => expect((await rpc.call(stranger, 'GetTask', { id: randomUUID() })).error?.code).toBe(-32001))).toBe(rest);
  });
});
