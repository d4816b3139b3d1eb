import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { type Actor, createAgent, signUpHuman } from './actors.ts';
import { type TestApp, testAdminToken } from './app.ts';

/** Marketplace steps as a user performs them over REST, for tests that need a few of them. */
export const admin = { 'X-Admin-Token': testAdminToken };

export async function credit(test: TestApp, userId: string, amount: string, currency: 'UT' | 'CNY' = 'UT') {
  const response = await test.http.post('/api/v1/admin/wallet/credit').set(admin).send({ user_id: userId, currency, amount }).expect(200);
  return response.body.data;
}

/** Where test capabilities say they run: per_use and per_query need a callback address (never called here). */
export const sellerCallbackUrl = 'https://seller.example/callback';

export async function createCapability(test: TestApp, seller: Actor, overrides: Record<string, unknown> = {}) {
  const response = await test.http
    .post('/api/v1/capabilities')
    .set(seller.headers)
    .send({
      title: 'Summarize a PDF',
      description: 'Returns a summary',
      category: 'ai_automation',
      capability_type: 'service',
      pricing_model: 'per_use',
      price_ut: '10.00',
      callback_url: sellerCallbackUrl,
      ...overrides,
    })
    .expect(201);
  return response.body.data as { id: string; price_ut: string };
}

export async function buy(test: TestApp, buyer: Actor, capabilityId: string, extra: Record<string, unknown> = {}) {
  const response = await test.http
    .post('/api/v1/transactions')
    .set(buyer.headers)
    .set('Idempotency-Key', randomUUID())
    .send({ capability_id: capabilityId, ...extra });
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.data as { id: string; status: string; price_ut: string; currency: string };
}

export function act(test: TestApp, actor: Actor, transactionId: string, action: string, body?: Record<string, unknown>) {
  const request = test.http.post(`/api/v1/transactions/${transactionId}/${action}`).set(actor.headers);
  return body ? request.send(body) : request;
}

export async function balance(test: TestApp, actor: Actor, currency: 'ut' | 'cash' = 'ut') {
  const response = await test.http.get('/api/v1/wallet/').set(actor.headers).expect(200);
  return response.body.data[currency] as { available: string; frozen: string; total: string };
}

/** A funded agent buyer, an agent seller and a capability of the seller's. */
export async function agentMarket(test: TestApp, funds = '100.00', capability: Record<string, unknown> = {}) {
  const buyer = await createAgent(test);
  const seller = await createAgent(test);
  if (funds !== '0') await credit(test, buyer.userId, funds);
  const offer = await createCapability(test, seller, capability);
  return { buyer, seller, capability: offer };
}

export async function humanMarket(test: TestApp, funds = '100.00') {
  const buyer = await signUpHuman(test);
  const seller = await signUpHuman(test);
  await credit(test, buyer.userId, funds, 'CNY');
  const offer = await createCapability(test, seller);
  return { buyer, seller, capability: offer };
}
