import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCaller, v03Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket, createCapability } from '../helpers/market.ts';
import { roundTripMeter } from '../helpers/round-trips.ts';

/**
 * `tasks/get` and `GetTask` answer with one database round trip (issue 15, point 10): the
 * conversation, the client task id, the transaction, the task row and its messages are read by
 * one statement (store/a2a.ts findTask), not four or five in turn. Measured from outside the
 * engine (helpers/round-trips.ts): the database connections the pools hand out to one request,
 * compared with `GET /transactions/{id}` (one SELECT) in the same app.
 */
let test: TestApp;
let http: ReturnType<typeof roundTripMeter>['http'];
let roundTrips: ReturnType<typeof roundTripMeter>['roundTrips'];
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  ({ http, roundTrips } = roundTripMeter(test));
  rpc = rpcCaller({ ...test, http });
});
afterAll(() => test.close());

describe('reading a task', () => {
  it('costs one round trip, as reading the transaction over REST does, by any name the task has', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const clientTaskId = `client-${randomUUID()}`;
    const bought = await rpc.ok(buyer, 'message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
    });
    const legacy = await rpc.ok(buyer, 'tasks/send', {
      id: clientTaskId,
      sessionId: randomUUID(),
      message: { role: 'user', parts: [{ type: 'data', data: { capability_id: capability.id } }] },
    });
    await createCapability(test, seller, { title: 'Translate contracts into Chinese', description: 'Legal translation', category: 'translation' });
    const conversation = await rpc.ok(buyer, 'message/send', v03Text('Translate a contract into Chinese'));

    const rest = await roundTrips((mark) => http.get(`/api/v1/transactions/${bought.id}`).set(buyer.headers).set(mark).expect(200));
    expect(rest).toBeGreaterThanOrEqual(1);
    for (const [method, id] of [
      ['tasks/get', bought.id],
      ['GetTask', bought.id],
      ['tasks/get', clientTaskId],
      ['GetTask', conversation.id],
    ] as const) {
      let answer: Record<string, unknown> | undefined;
      expect(await roundTrips(async (mark) => (answer = await rpc.ok(buyer, method, { id }, mark)))).toBe(rest);
      expect(answer!.id).toBe(id === clientTaskId ? legacy.id : id);
    }
    // The seller reads the purchase too (without the buyer's messages), at the same cost.
    expect(await roundTrips((mark) => rpc.ok(seller, 'tasks/get', { id: bought.id }, mark))).toBe(rest);
  });

  it('answers -32001 for a task of someone else, at the same cost', async () => {
    const { buyer, capability } = await agentMarket(test);
    const { buyer: stranger } = await agentMarket(test);
    const bought = await rpc.ok(buyer, 'message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
    });
    // A caller's first request also loads who it is; the comparison starts after it.
    await test.http.get('/api/v1/wallet/').set(stranger.headers).expect(200);
    const rest = await roundTrips((mark) => http.get(`/api/v1/transactions/${bought.id}`).set(stranger.headers).set(mark).expect(404));
    expect(await roundTrips(async (mark) => expect((await rpc.call(stranger, 'tasks/get', { id: bought.id }, mark)).error?.code).toBe(-32001))).toBe(rest);
    expect(await roundTrips(async (mark) => expect((await rpc.call(stranger, 'GetTask', { id: randomUUID() }, mark)).error?.code).toBe(-32001))).toBe(rest);
  });

  it("counts only the request's own connections while other work takes connections at the same time", async () => {
    const { buyer, capability } = await agentMarket(test);
    const bought = await rpc.ok(buyer, 'message/send', {
      message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: capability.id } }] },
    });
    const rest = await roundTrips((mark) => http.get(`/api/v1/transactions/${bought.id}`).set(buyer.headers).set(mark).expect(200));
    // Other work of the server while each request is measured, as a job or the sweeper would do
    // it: statements on the same pool, started at the same moment but not by the request.
    const db = test.runtime.engine.dependencies.db;
    const alongside = <T>(request: Promise<T>) => Promise.all([request, ...Array.from({ length: 5 }, () => db.raw('SELECT 1 AS one'))]);
    expect(await roundTrips((mark) => alongside(http.get(`/api/v1/transactions/${bought.id}`).set(buyer.headers).set(mark).expect(200)))).toBe(rest);
    expect(await roundTrips((mark) => alongside(rpc.ok(buyer, 'GetTask', { id: bought.id }, mark)))).toBe(rest);
    expect(await roundTrips((mark) => alongside(rpc.ok(buyer, 'tasks/get', { id: bought.id }, mark)))).toBe(rest);
  });
});
