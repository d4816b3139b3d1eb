import { expect } from 'vitest';
import type { Actor } from './actors.ts';
import type { TestApp } from './app.ts';

/** Demand steps as a requester performs them over REST. */
export async function createDemand(test: TestApp, requester: Actor, body: Record<string, unknown>) {
  const response = await test.http.post('/api/v1/demands').set(requester.headers).send(body);
  expect(response.status, JSON.stringify(response.body)).toBe(201);
  return response.body.data as {
    id: string;
    status: string;
    transaction_id: string | null;
    currency: string;
    max_price_ut: string | null;
    auto_accept_failure: Record<string, unknown> | null;
  };
}

export function match(test: TestApp, caller: Actor, body: Record<string, unknown>) {
  return test.http.post('/api/v1/capabilities/match').set(caller.headers).send(body);
}

export const candidateIds = (response: { body: { data: { candidates: { entity_id: string }[] } } }) =>
  response.body.data.candidates.map((candidate) => candidate.entity_id);
