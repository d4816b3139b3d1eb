import { randomBytes, randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { candidatesOf, rpcCaller, v10Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';
import { callTool, connectMcp } from '../helpers/mcp.ts';
import { listen } from '../helpers/server.ts';

/**
 * A buyer is never charged above the price it saw (docs/decisions/money-and-escrow.md "Price
 * ceilings"). Every path that charges buys once at the listed price, the seller raises the price,
 * and the next charge is refused with 4093 (JSON-RPC -32193) naming both prices: no transaction,
 * nothing frozen, nothing charged. Each path then buys with the new price sent as max_price.
 */
let test: TestApp;
let baseUrl: string;
let closeServer: () => Promise<void>;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  const server = await listen(test);
  baseUrl = server.url;
  closeServer = server.close;
  rpc = rpcCaller(test);
});
afterAll(async () => {
  await closeServer();
  await test.close();
  await callbacks.close();
});

type Json = Record<string, any>;

async function market(capability: Record<string, unknown> = {}) {
  const buyer = await createAgent(test);
  const seller = await createAgent(test);
  await credit(test, buyer.userId, '1000.00');
  const offered = await createCapability(test, seller, { price_ut: '0.10', ...capability });
  return { buyer, seller, capability: offered as Json };
}

const instant = () => ({ pricing_model: 'per_query', callback_url: callbacks.url('/ok') });

async function raisePrice(seller: Actor, capabilityId: string, price: string) {
  await test.http.put(`/api/v1/capabilities/${capabilityId}`).set(seller.headers).send({ price_ut: price }).expect(200);
}

async function transactionCount(buyer: Actor): Promise<number> {
  return (await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.total;
}

/** The refusal left everything as it was: the same balances and no new transaction. */
async function expectUntouched(buyer: Actor, before: { available: string; frozen: string }, transactions: number) {
  expect(await balance(test, buyer)).toMatchObject({ available: before.available, frozen: before.frozen });
  expect(await transactionCount(buyer)).toBe(transactions);
}

const refusal = { code: 4093, message: 'price_above_ceiling', data: { currency: 'UT', price: '999.00', max_price: '0.10' } };

function invoke(buyer: Actor, capabilityId: string, body: Json = { input: {} }) {
  return test.http.post(`/api/v1/capabilities/${capabilityId}/invoke`).set(buyer.headers).set('Idempotency-Key', randomUUID()).send(body);
}

function purchase(buyer: Actor, capabilityId: string, extra: Json = {}) {
  return test.http
    .post('/api/v1/transactions')
    .set(buyer.headers)
    .set('Idempotency-Key', randomUUID())
    .send({ capability_id: capabilityId, ...extra });
}

describe('REST', () => {
  it('invoke: a repeat buyer is refused after a price rise until it sends the new price as max_price', async () => {
    const { buyer, seller, capability } = await market(instant());
    expect((await invoke(buyer, capability.id)).body).toMatchObject({ code: 0, data: { charged_ut: '0.10', status: 'settled' } });
    await raisePrice(seller, capability.id, '999.00');
    const before = await balance(test, buyer);
    const refused = await invoke(buyer, capability.id);
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject(refusal);
    expect(refused.body.data.detail).toContain('send max_price "999.00"');
    await expectUntouched(buyer, before, 1);
    expect((await invoke(buyer, capability.id, { input: {}, max_price: '998.99' })).body).toMatchObject({ code: 4093, data: { max_price: '998.99' } });
    await expectUntouched(buyer, before, 1);
    expect((await invoke(buyer, capability.id, { input: {}, max_price: '999.00' })).body).toMatchObject({ code: 0, data: { charged_ut: '999.00' } });
  });

  it('invoke: a first buyer with a max_price below the price is refused; a lowered price needs no max_price', async () => {
    const { buyer, seller, capability } = await market(instant());
    const before = await balance(test, buyer);
    expect((await invoke(buyer, capability.id, { input: {}, max_price: '0.09' })).body).toMatchObject({
      code: 4093,
      data: { price: '0.10', max_price: '0.09' },
    });
    await expectUntouched(buyer, before, 0);
    expect((await invoke(buyer, capability.id)).body.code).toBe(0);
    await raisePrice(seller, capability.id, '0.05');
    expect((await invoke(buyer, capability.id)).body).toMatchObject({ code: 0, data: { charged_ut: '0.05' } });
    // The buyer last paid 0.05: back up to 0.10 is a rise again.
    await raisePrice(seller, capability.id, '0.10');
    expect((await invoke(buyer, capability.id)).body).toMatchObject({ code: 4093, data: { price: '0.10', max_price: '0.05' } });
  });

  it('invoke with no body at all (only the Idempotency-Key header) is 4001 and moves nothing', async () => {
    const { buyer, capability } = await market(instant());
    const before = await balance(test, buyer);
    const response = await test.http.post(`/api/v1/capabilities/${capability.id}/invoke`).set(buyer.headers).set('Idempotency-Key', randomUUID());
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 4001 });
    await expectUntouched(buyer, before, 0);
    expect(callbacks.received.filter((call) => call.body.includes(capability.id))).toHaveLength(0);
  });

  it('purchase: refused after a price rise, bought with max_price; per_hour compares the hourly price', async () => {
    const { buyer, seller, capability } = await market();
    expect((await purchase(buyer, capability.id)).status).toBe(201);
    await raisePrice(seller, capability.id, '999.00');
    const before = await balance(test, buyer);
    expect((await purchase(buyer, capability.id)).body).toMatchObject(refusal);
    await expectUntouched(buyer, before, 1);
    expect((await purchase(buyer, capability.id, { max_price: '999.00' })).body).toMatchObject({ code: 0, data: { price_ut: '999.00' } });

    const hourly = await market({ pricing_model: 'per_hour', price_ut: '2.00' });
    expect((await purchase(hourly.buyer, hourly.capability.id, { booked_hours: 3 })).body).toMatchObject({ data: { price_ut: '6.00' } });
    // More hours at the same hourly price is no rise.
    expect((await purchase(hourly.buyer, hourly.capability.id, { booked_hours: 5 })).body).toMatchObject({ data: { price_ut: '10.00' } });
    await raisePrice(hourly.seller, hourly.capability.id, '2.50');
    expect((await purchase(hourly.buyer, hourly.capability.id, { booked_hours: 2 })).body).toMatchObject({
      code: 4093,
      data: { price: '5.00', max_price: '4.00' },
    });
  });

  it('purchase per_day: the agreed price is per day, a started day counting whole', async () => {
    const daily = await market({ pricing_model: 'per_day', price_ut: '10.00' });
    // 36 hours are two days: 20.00, so the day was agreed at 10.00.
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 36 })).body).toMatchObject({ data: { price_ut: '20.00' } });
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 72 })).body).toMatchObject({ data: { price_ut: '30.00' } });
    await raisePrice(daily.seller, daily.capability.id, '12.00');
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 24 })).body).toMatchObject({
      code: 4093,
      data: { price: '12.00', max_price: '10.00' },
    });
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 48, max_price: '24.00' })).body).toMatchObject({ data: { price_ut: '24.00' } });
  });

  it('a pricing model changed since the last purchase is no kept price: 10.00 a day turned 10.00 an hour is refused on REST, MCP and A2A', async () => {
    const daily = await market({ pricing_model: 'per_day', price_ut: '10.00' });
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 24 })).body).toMatchObject({ data: { price_ut: '10.00' } });
    await test.http.put(`/api/v1/capabilities/${daily.capability.id}`).set(daily.seller.headers).send({ pricing_model: 'per_hour' }).expect(200);
    const before = await balance(test, daily.buyer);
    const byHour = { code: 4093, message: 'price_above_ceiling', data: { currency: 'UT', price: '240.00', max_price: '10.00' } };
    const refused = (await purchase(daily.buyer, daily.capability.id, { booked_hours: 24 })).body;
    expect(refused).toMatchObject(byHour);
    expect(refused.data.detail).toContain('now priced per_hour, not per_day');
    const client = await connectMcp(baseUrl, daily.buyer.headers);
    try {
      expect(await callTool(client, 'buy_capability', { capability_id: daily.capability.id, booked_hours: 24 })).toMatchObject({ isError: true, data: byHour });
    } finally {
      await client.close();
    }
    const part = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: daily.capability.id, booked_hours: 24 } }] } };
    expect((await rpc.call(daily.buyer, 'SendMessage', part)).error).toMatchObject({ code: -32193, data: byHour });
    await expectUntouched(daily.buyer, before, 1);
    // Sent as max_price, the new price is bought.
    expect((await purchase(daily.buyer, daily.capability.id, { booked_hours: 24, max_price: '240.00' })).body).toMatchObject({ data: { price_ut: '240.00' } });

    // Terms the old model cannot price (per use then, by the hour now; by the hour then, per use now):
    // the unit price the buyer last paid is the ceiling.
    const perUse = await market({ pricing_model: 'per_use', price_ut: '5.00' });
    expect((await purchase(perUse.buyer, perUse.capability.id)).body).toMatchObject({ data: { price_ut: '5.00' } });
    await test.http
      .put(`/api/v1/capabilities/${perUse.capability.id}`)
      .set(perUse.seller.headers)
      .send({ pricing_model: 'per_hour', price_ut: '1.00' })
      .expect(200);
    expect((await purchase(perUse.buyer, perUse.capability.id, { booked_hours: 6 })).body).toMatchObject({
      code: 4093,
      data: { price: '6.00', max_price: '5.00' },
    });
    expect((await purchase(perUse.buyer, perUse.capability.id, { booked_hours: 5 })).body).toMatchObject({ data: { price_ut: '5.00' } });
    const hourly = await market({ pricing_model: 'per_hour', price_ut: '1.00' });
    expect((await purchase(hourly.buyer, hourly.capability.id, { booked_hours: 24 })).body).toMatchObject({ data: { price_ut: '24.00' } });
    await test.http
      .put(`/api/v1/capabilities/${hourly.capability.id}`)
      .set(hourly.seller.headers)
      .send({ pricing_model: 'per_use', price_ut: '24.00' })
      .expect(200);
    expect((await purchase(hourly.buyer, hourly.capability.id)).body).toMatchObject({ code: 4093, data: { price: '24.00', max_price: '1.00' } });
  });

  it('reads max_price: null as no ceiling sent on every facade: REST, an MCP tool and an A2A data part buy alike', async () => {
    const { buyer, capability } = await market();
    expect((await purchase(buyer, capability.id, { max_price: null })).body).toMatchObject({ code: 0, data: { price_ut: '0.10' } });
    const client = await connectMcp(baseUrl, buyer.headers);
    try {
      expect(await callTool(client, 'buy_capability', { capability_id: capability.id, max_price: null })).toMatchObject({
        isError: false,
        data: { transaction: { price_ut: '0.10', status: 'frozen' } },
      });
    } finally {
      await client.close();
    }
    const part = { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data: { capability_id: capability.id, max_price: null } }] } };
    expect((await rpc.ok(buyer, 'SendMessage', part)).task.metadata.marketplace).toMatchObject({ status: 'frozen', price: '0.10' });
  });

  it('the OpenAPI document declares max_price and 4093 on invoke and purchase, and a required invoke body', async () => {
    const document = (await test.http.get('/api/v1/public/openapi.json').expect(200)).body;
    const invokeOperation = document.paths['/api/v1/capabilities/{cap_id}/invoke'].post;
    expect(invokeOperation.requestBody.required).toBe(true);
    expect(Object.keys(invokeOperation.responses)).toContain('409');
    expect(JSON.stringify(document.components.schemas.InvokeRequest)).toContain('max_price');
    expect(JSON.stringify(document.components.schemas.TransactionCreate)).toContain('max_price');
    expect(JSON.stringify(document.paths['/api/v1/transactions'].post.responses['409'])).toContain('4093');
  });
});

describe('MCP', () => {
  let client: Client;
  let buyer: Actor;
  afterAll(() => client?.close());

  it('buy_capability: refused after a price rise with both prices, bought with max_price', async () => {
    const market_ = await market();
    buyer = market_.buyer;
    client = await connectMcp(baseUrl, buyer.headers);
    expect((await callTool(client, 'buy_capability', { capability_id: market_.capability.id })).isError).toBe(false);
    await raisePrice(market_.seller, market_.capability.id, '999.00');
    const before = await balance(test, buyer);
    const refused = await callTool(client, 'buy_capability', { capability_id: market_.capability.id });
    expect(refused).toMatchObject({ isError: true, data: refusal });
    await expectUntouched(buyer, before, 1);
    const bought = await callTool(client, 'buy_capability', { capability_id: market_.capability.id, max_price: '999.00' });
    expect(bought).toMatchObject({ isError: false, data: { transaction: { price_ut: '999.00', status: 'frozen' } } });
  });
});

describe('A2A', () => {
  const rpcRefusal = { code: -32193, data: { code: 4093, message: 'price_above_ceiling', data: { currency: 'UT', price: '999.00', max_price: '0.10' } } };
  const dataMessage = (data: Json, extra: Json = {}) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ data }], ...extra } });

  it('a data-part purchase and a blocking send of an instant capability: a repeat buyer is refused; max_price in the part buys', async () => {
    for (const capability of [{}, instant()]) {
      const { buyer, seller, capability: offered } = await market(capability);
      await rpc.ok(buyer, 'SendMessage', dataMessage({ capability_id: offered.id }));
      await raisePrice(seller, offered.id, '999.00');
      const before = await balance(test, buyer);
      expect((await rpc.call(buyer, 'SendMessage', dataMessage({ capability_id: offered.id }))).error).toMatchObject(rpcRefusal);
      expect(
        (
          await rpc.call(buyer, 'message/send', {
            message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'data', data: { capability_id: offered.id } }] },
          })
        ).error,
      ).toMatchObject(rpcRefusal);
      await expectUntouched(buyer, before, 1);
      const bought = (await rpc.ok(buyer, 'SendMessage', dataMessage({ capability_id: offered.id, max_price: '999.00' }))).task;
      expect(bought.metadata.marketplace.price).toBe('999.00');
    }
  });

  /** A conversation offering the seller's capability at 0.10, then the seller raises it to 999. */
  async function offeredThenRaised(capability: Record<string, unknown> = {}) {
    const topic = `topic${randomBytes(3).toString('hex')}`;
    const parties = await market({ title: `Translate ${topic} manuals into French`, description: `French translations of ${topic} manuals`, ...capability });
    const started = (await rpc.ok(parties.buyer, 'SendMessage', v10Text(`Translate my ${topic} manual into French`))).task;
    const candidate = candidatesOf(started).candidates.find((entry: Json) => entry.capability_id === parties.capability.id)!;
    expect(candidate.price).toBe('0.10');
    await raisePrice(parties.seller, parties.capability.id, '999.00');
    return { ...parties, started, candidate };
  }

  it('a pick of a candidate shown by the hour agrees to the hourly price shown times the hours booked', async () => {
    const topic = `topic${randomBytes(3).toString('hex')}`;
    const parties = await market({
      title: `Translate ${topic} manuals into French`,
      description: `French translations of ${topic} manuals`,
      pricing_model: 'per_hour',
      price_ut: '4.00',
    });
    const started = (await rpc.ok(parties.buyer, 'SendMessage', v10Text(`Translate my ${topic} manual into French`))).task;
    const candidate = candidatesOf(started).candidates.find((entry: Json) => entry.capability_id === parties.capability.id)!;
    expect(candidate).toMatchObject({ price: '4.00', pricing_model: 'per_hour' });
    const pick = () => dataMessage({ capability_id: candidate.capability_id, booked_hours: 5 }, { taskId: started.id });
    await raisePrice(parties.seller, parties.capability.id, '4.50');
    const refused = (await rpc.call(parties.buyer, 'SendMessage', pick())).error;
    expect(refused).toMatchObject({ code: -32193, data: { code: 4093, data: { price: '22.50', max_price: '20.00' } } });
    expect(refused?.data?.data.detail).toContain('above the one you were shown');
    await expectUntouched(parties.buyer, await balance(test, parties.buyer), 0);
    await raisePrice(parties.seller, parties.capability.id, '4.00');
    expect((await rpc.ok(parties.buyer, 'SendMessage', pick())).task.metadata.marketplace).toMatchObject({ status: 'frozen', price: '20.00' });
  });

  it('a conversation pick by number, by id and by data part is refused above the price shown; nothing is charged', async () => {
    const picks = [
      (candidate: Json, taskId: string) => v10Text(String(candidate.number), { taskId }),
      (candidate: Json, taskId: string) => v10Text(`buy ${candidate.capability_id}`, { taskId }),
      (candidate: Json, taskId: string) => dataMessage({ capability_id: candidate.capability_id }, { taskId }),
    ];
    for (const pickOf of picks) {
      for (const capability of [{}, instant()]) {
        const { buyer, started, candidate } = await offeredThenRaised(capability);
        const before = await balance(test, buyer);
        expect((await rpc.call(buyer, 'SendMessage', pickOf(candidate, started.id))).error).toMatchObject(rpcRefusal);
        await expectUntouched(buyer, before, 0);
        // The conversation is still choosing: the buyer can accept the new price in a data part.
        const task = await rpc.ok(buyer, 'GetTask', { id: started.id });
        expect(task.metadata.marketplace).toMatchObject({ status: 'choosing', transaction_id: null });
      }
    }
    const { buyer, started, candidate } = await offeredThenRaised();
    const bought = (await rpc.ok(buyer, 'SendMessage', dataMessage({ capability_id: candidate.capability_id, max_price: '999.00' }, { taskId: started.id })))
      .task;
    expect(bought.metadata.marketplace).toMatchObject({ status: 'frozen', price: '999.00' });
  });
});
