import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { agentMarket } from './helpers/market.ts';

let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(async () => {
  await test.close();
});

/** About 0.9 MB of JSON in one input field, as a buyer with a large document would send it. */
const largeInput = () => ({ document: 'x'.repeat(900_000) });

/** Bytes the transaction takes in the database: its row, its outbox events and its stored responses. */
async function storedBytes(transactionId: string) {
  const db = test.runtime.engine.dependencies.db;
  const measure = async (sql: string) => Number((await db.raw(sql, [transactionId])).rows[0].bytes ?? 0);
  const row = await measure('SELECT sum(octet_length(input::text)) AS bytes FROM transactions WHERE id = ?');
  const events = await measure('SELECT sum(octet_length(payload::text)) AS bytes FROM outbox_events WHERE transaction_id = ?');
  const responses = await measure("SELECT sum(octet_length(response_body::text)) AS bytes FROM idempotency_keys WHERE response_body->>'id' = ?");
  return { row, events, responses, total: row + events + responses };
}

describe('a transaction with a large input', () => {
  it('is stored about once, not once per event and stored response', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const input = largeInput();
    const inputBytes = JSON.stringify(input).length;
    const keyed = (request: ReturnType<TestApp['http']['post']>) => request.set('Idempotency-Key', randomUUID());
    const created = await keyed(test.http.post('/api/v1/transactions').set(buyer.headers)).send({ capability_id: capability.id, input }).expect(201);
    const id = created.body.data.id as string;
    expect(created.body.data.input).toEqual(input);
    await keyed(test.http.post(`/api/v1/transactions/${id}/freeze`).set(buyer.headers)).expect(200);
    await keyed(test.http.post(`/api/v1/transactions/${id}/accept`).set(seller.headers)).expect(200);
    await keyed(test.http.post(`/api/v1/transactions/${id}/reject`).set(seller.headers)).expect(200);
    const bytes = await storedBytes(id);
    expect(bytes.responses).toBeGreaterThan(0);
    expect(bytes.total, JSON.stringify(bytes)).toBeLessThan(inputBytes * 1.2);
  });
});
