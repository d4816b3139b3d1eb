import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, balance, buy, humanMarket } from '../helpers/market.ts';

/** The same scenarios over REST and over JSON-RPC: the same states, balances and error codes. */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

type Json = Record<string, any>;

async function rpc(actor: Actor, method: string, params: unknown): Promise<Json> {
  const response = await test.http.post('/api/v1/rpc').set(actor.headers).send({ jsonrpc: '2.0', id: 1, method, params }).expect(200);
  return response.body as Json;
}

const sendMessage = (actor: Actor, data: Record<string, unknown>, taskId?: string) =>
  rpc(actor, 'message/send', {
    message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data }], ...(taskId ? { taskId } : {}) },
  });

const envelope = (body: Json) => ({ code: body.code, message: body.message, data: body.data });
const rpcEnvelope = (body: Json) => ({ code: body.error.data.code, message: body.error.data.message, data: body.error.data.data });

async function restGet(actor: Actor, id: string): Promise<Json> {
  return (await test.http.get(`/api/v1/transactions/${id}`).set(actor.headers).expect(200)).body.data as Json;
}

describe('a purchase over REST and over JSON-RPC', () => {
  it('walks through the same states with the same balances', async () => {
    const overRest = await agentMarket(test, '50.00', { price_ut: '20.00' });
    const overRpc = await agentMarket(test, '50.00', { price_ut: '20.00' });

    const restStates: string[] = [];
    const created = await buy(test, overRest.buyer, overRest.capability.id);
    restStates.push((await act(test, overRest.buyer, created.id, 'freeze').expect(200)).body.data.status);
    const rpcStates: string[] = [];
    const sent = await sendMessage(overRpc.buyer, { capability_id: overRpc.capability.id });
    const taskId: string = sent.result.id;
    rpcStates.push(sent.result.metadata.marketplace.status);
    expect(await balance(test, overRpc.buyer)).toEqual(await balance(test, overRest.buyer));

    for (const [action, body] of [
      ['accept', undefined],
      ['deliver', { result_payload: { pages: 3 } }],
    ] as const) {
      restStates.push((await act(test, overRest.seller, created.id, action, body).expect(200)).body.data.status);
      await act(test, overRpc.seller, taskId, action, body).expect(200);
      rpcStates.push((await rpc(overRpc.buyer, 'tasks/get', { id: taskId })).result.metadata.marketplace.status);
    }
    restStates.push((await act(test, overRest.buyer, created.id, 'confirm').expect(200)).body.data.status);
    rpcStates.push((await sendMessage(overRpc.buyer, { action: 'confirm' }, taskId)).result.metadata.marketplace.status);

    expect(rpcStates).toEqual(restStates);
    expect(rpcStates).toEqual(['frozen', 'accepted', 'delivered', 'settled']);
    expect(await balance(test, overRpc.buyer)).toEqual(await balance(test, overRest.buyer));
    expect(await balance(test, overRpc.seller)).toEqual(await balance(test, overRest.seller));

    // The marketplace metadata is the REST view under A2A names.
    const { id, price_ut, result_payload, ...view } = await restGet(overRpc.buyer, taskId);
    const task = (await rpc(overRpc.buyer, 'tasks/get', { id: taskId })).result;
    expect(task.metadata.marketplace).toEqual({ transaction_id: id, price: price_ut, ...view });
    expect(task.artifacts[0].parts[0].data).toEqual(result_payload);
  });

  it('lets a human buy in CNY with a bearer token, as over REST', async () => {
    const { buyer, capability } = await humanMarket(test, '30.00');
    const sent = await sendMessage(buyer, { capability_id: capability.id });
    expect(sent.result.metadata.marketplace).toMatchObject({ status: 'frozen', currency: 'CNY', price: '10.00' });
    expect(await balance(test, buyer, 'cash')).toMatchObject({ available: '20.00', frozen: '10.00' });
  });
});

describe('the same errors over both transports', () => {
  it('insufficient balance: 4020 with the same data', async () => {
    const restSide = await agentMarket(test, '5.00');
    const rpcSide = await agentMarket(test, '5.00');
    const created = await buy(test, restSide.buyer, restSide.capability.id);
    const rest = await act(test, restSide.buyer, created.id, 'freeze').expect(402);
    const overRpc = await sendMessage(rpcSide.buyer, { capability_id: rpcSide.capability.id });
    expect(overRpc.error.code).toBe(-32120);
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
    // Both leave a pending_freeze transaction behind; RPC names it in the error.
    expect((await restGet(rpcSide.buyer, overRpc.error.data.transaction_id)).status).toBe('pending_freeze');
  });

  it('unknown capability: 4040 (-32001) with the same data', async () => {
    const { buyer } = await agentMarket(test);
    const capabilityId = randomUUID();
    const rest = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capabilityId })
      .expect(404);
    const overRpc = await sendMessage(buyer, { capability_id: capabilityId });
    expect(overRpc.error.code).toBe(-32001);
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
  });

  it('a capability of the other space is just as invisible', async () => {
    const { capability } = await agentMarket(test);
    const human = await signUpHuman(test);
    const rest = await test.http.post('/api/v1/transactions').set(human.headers).send({ capability_id: capability.id }).expect(404);
    const overRpc = await sendMessage(human, { capability_id: capability.id });
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
  });

  it('cancel from settled: 4090 over REST, -32002 carrying 4090 over RPC', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const sent = await sendMessage(buyer, { capability_id: capability.id });
    const id: string = sent.result.id;
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, buyer, id, 'confirm').expect(200);
    const rest = await act(test, buyer, id, 'cancel').expect(409);
    const overRpc = await rpc(buyer, 'tasks/cancel', { id });
    expect(overRpc.error.code).toBe(-32002);
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
    expect(rest.body.data).toEqual({ status: 'settled', action: 'cancel' });
  });

  it('a seller cancelling: 4030 over both', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const id: string = (await sendMessage(buyer, { capability_id: capability.id })).result.id;
    const rest = await act(test, seller, id, 'cancel').expect(403);
    const overRpc = await rpc(seller, 'tasks/cancel', { id });
    expect(overRpc.error.code).toBe(-32130);
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
  });

  it('confirming before delivery: 4090 over both', async () => {
    const { buyer, capability } = await agentMarket(test);
    const id: string = (await sendMessage(buyer, { capability_id: capability.id })).result.id;
    const rest = await act(test, buyer, id, 'confirm').expect(409);
    const overRpc = await sendMessage(buyer, { action: 'confirm' }, id);
    expect(rpcEnvelope(overRpc)).toEqual(envelope(rest.body));
  });

  it('invalid input: 4000 over both, the path naming where it was', async () => {
    const { buyer, capability } = await agentMarket(test);
    const rest = await test.http
      .post('/api/v1/transactions')
      .set(buyer.headers)
      .set('Idempotency-Key', randomUUID())
      .send({ capability_id: capability.id, booked_hours: 0 })
      .expect(400);
    const overRpc = await sendMessage(buyer, { capability_id: capability.id, booked_hours: 0 });
    expect(overRpc.error.code).toBe(-32602);
    expect(rest.body.code).toBe(4000);
    expect(overRpc.error.data.code).toBe(4000);
    expect(rest.body.data.errors[0].path).toBe('body.booked_hours');
    expect(overRpc.error.data.data.errors[0].path).toBe('params.message.parts.0.data.booked_hours');
    expect(overRpc.error.data.data.errors[0].message).toBe(rest.body.data.errors[0].message);
  });
});
