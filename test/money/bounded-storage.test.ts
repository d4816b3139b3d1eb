import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';
import { rpcStreamResults } from '../helpers/rpc-stream.ts';
import { listen, openEventSource } from '../helpers/server.ts';

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

/** About 0.9 MB of JSON in one input field, as a buyer with a large document would send it. */
const largeInput = () => ({ document: 'x'.repeat(900_000) });
/** A result close to the largest a seller may deliver (256 KiB). */
const largeResult = () => ({ report: 'r'.repeat(200_000) });

/** Bytes the transaction takes in the database: its row's input, its outbox events and its stored responses. */
async function storedBytes(transactionId: string) {
  const db = test.runtime.engine.dependencies.db;
  const measure = async (sql: string) => Number((await db.raw(sql, [transactionId])).rows[0].bytes ?? 0);
  const row = await measure('SELECT sum(octet_length(input::text)) AS bytes FROM transactions WHERE id = ?');
  const events = await measure('SELECT sum(octet_length(payload::text)) AS bytes FROM outbox_events WHERE transaction_id = ?');
  const responses = await measure("SELECT sum(octet_length(response_body::text)) AS bytes FROM idempotency_keys WHERE response_body->>'id' = ?");
  return { row, events, responses, total: row + events + responses };
}

const post = (actor: Actor, path: string, key: string = randomUUID()) => test.http.post(path).set(actor.headers).set('Idempotency-Key', key);

describe('a transaction with a large input', () => {
  it('is stored about once, not once per event and stored response', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const input = largeInput();
    const inputBytes = JSON.stringify(input).length;
    const created = await post(buyer, '/api/v1/transactions').send({ capability_id: capability.id, input }).expect(201);
    const id = created.body.data.id as string;
    expect(created.body.data.input).toEqual(input);
    await post(buyer, `/api/v1/transactions/${id}/freeze`).expect(200);
    await post(seller, `/api/v1/transactions/${id}/accept`).expect(200);
    await post(seller, `/api/v1/transactions/${id}/reject`).expect(200);
    const bytes = await storedBytes(id);
    expect(bytes.events).toBeGreaterThan(0);
    expect(bytes.responses).toBeGreaterThan(0);
    expect(bytes.total, JSON.stringify(bytes)).toBeLessThan(inputBytes * 1.2);
  });

  it('replays a create under the same key exactly as first answered, input included', async () => {
    const { buyer, capability } = await agentMarket(test);
    const input = largeInput();
    const key = randomUUID();
    const first = await post(buyer, '/api/v1/transactions', key).send({ capability_id: capability.id, input }).expect(201);
    const replay = await post(buyer, '/api/v1/transactions', key).send({ capability_id: capability.id, input }).expect(201);
    expect(replay.body.data).toEqual(first.body.data);
    expect(replay.body.data.input).toEqual(input);
    expect(replay.body.data).not.toHaveProperty('omitted_fields');
  });

  it('streams events that name the left-out input, which GET returns whole', async () => {
    const { buyer, capability } = await agentMarket(test);
    const input = largeInput();
    const id = (await post(buyer, '/api/v1/transactions').send({ capability_id: capability.id, input }).expect(201)).body.data.id;
    const client = openEventSource(`${server.url}/api/v1/transactions/${id}/events`, buyer.headers);
    await client.opened;
    await expect.poll(() => client.received.length).toBe(1);
    client.close();
    const view = client.received[0]!.data.data.transaction as unknown as Record<string, unknown>;
    expect(view.input).toBeNull();
    expect(view.omitted_fields).toEqual([{ field: 'input', bytes: JSON.stringify(input).length }]);
    expect(view.status).toBe('pending_freeze');
    const read = await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200);
    expect(read.body.data.input).toEqual(input);
  });

  it('is left out of lists and of A2A task reads, so an answer of many is bounded by the limits: named in omitted_fields, whole on GET', async () => {
    const { buyer, capability } = await agentMarket(test);
    const input = largeInput();
    const bytes = JSON.stringify(input).length;
    const id = (await post(buyer, '/api/v1/transactions').send({ capability_id: capability.id, input }).expect(201)).body.data.id as string;
    const listed = (await test.http.get('/api/v1/transactions').set(buyer.headers).expect(200)).body.data.items as Record<string, unknown>[];
    expect(listed.find((item) => item.id === id)).toMatchObject({ input: null, omitted_fields: [{ field: 'input', bytes }] });
    // Fifty reads of the task in one JSON-RPC batch: each names the input instead of carrying it.
    const batch = Array.from({ length: 50 }, (_, index) => ({ jsonrpc: '2.0', id: index, method: 'tasks/get', params: { id } }));
    const answered = await test.http.post('/api/v1/rpc').set(buyer.headers).send(batch).expect(200);
    expect(answered.text.length).toBeLessThan(bytes);
    for (const entry of answered.body as { result: { metadata: { marketplace: Record<string, unknown> } } }[]) {
      expect(entry.result.metadata.marketplace).toMatchObject({ input: null, omitted_fields: [{ field: 'input', bytes }] });
    }
    const read = await test.http.get(`/api/v1/transactions/${id}`).set(buyer.headers).expect(200);
    expect(read.body.data.input).toEqual(input);
  });
});

describe('a large delivered result', () => {
  it('is left out of the event but reaches a JSON-RPC stream as the artifact, and a replayed deliver returns it', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const id = (await post(buyer, '/api/v1/transactions').send({ capability_id: capability.id }).expect(201)).body.data.id;
    await post(buyer, `/api/v1/transactions/${id}/freeze`).expect(200);
    await post(seller, `/api/v1/transactions/${id}/accept`).expect(200);
    const streamed = rpcStreamResults(`${server.url}/api/v1/rpc`, buyer, 'tasks/resubscribe', { id }, { 'A2A-Version': '0.3' });
    // Gives the stream time to send the accepted task before the delivery (not required to pass).
    await new Promise((resolve) => setTimeout(resolve, 300));
    const result = largeResult();
    const key = randomUUID();
    const delivered = await post(seller, `/api/v1/transactions/${id}/deliver`, key).send({ result_payload: result }).expect(200);
    const replayed = await post(seller, `/api/v1/transactions/${id}/deliver`, key).send({ result_payload: result }).expect(200);
    expect(replayed.body.data).toEqual(delivered.body.data);
    expect(replayed.body.data.result_payload).toEqual(result);

    const [event] = (await test.runtime.engine.dependencies.db('outbox_events').where({ transaction_id: id, transaction_sequence: 4 })) as {
      payload: { transaction: Record<string, unknown> };
    }[];
    expect(event!.payload.transaction.result_payload).toBeNull();
    expect(event!.payload.transaction.omitted_fields).toEqual([{ field: 'result_payload', bytes: JSON.stringify(result).length }]);

    // Usually the stream saw the accepted task first and the delivery as an update; if it started
    // late, its first task is the delivered one. Either way the artifact carries the whole result.
    const results = await streamed;
    const artifacts = results.flatMap((item) => (item.kind === 'artifact-update' ? [item.artifact] : (item.artifacts ?? [])));
    expect(artifacts.map((artifact) => artifact.parts[0].data)).toEqual([result]);
    expect(results.at(-1)!.status.state).toBe('input-required');
  });
});
