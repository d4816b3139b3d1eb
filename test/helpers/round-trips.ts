import { randomUUID } from 'node:crypto';
import supertest from 'supertest';
import type { TestApp } from './app.ts';
import { namedRequests } from './named-requests.ts';

/**
 * Counts the database round trips one request makes, from outside the engine: the connections
 * the pools hand out for it (each statement outside a transaction takes one). Only the request's
 * own connections count: the server's other work (a job a previous request kicked, the sweeper)
 * takes connections at any time, and counting every one of them failed 3 runs in 13 (issue 28,
 * point 16). Each request runs in an async context named by its `X-Measured` header
 * (helpers/named-requests.ts), and an acquisition is counted only under that name.
 */
export function roundTripMeter(test: TestApp) {
  const checkouts = new Map<string, number>();
  const { server, pools, nameOfCurrentRequest } = namedRequests(test, 'X-Measured');
  const http = supertest(server);
  for (const pool of pools) {
    const client = pool.client as { acquireConnection: (...args: unknown[]) => Promise<unknown> };
    const acquire = client.acquireConnection.bind(client);
    client.acquireConnection = (...args: unknown[]) => {
      const mark = nameOfCurrentRequest();
      if (mark !== undefined) checkouts.set(mark, (checkouts.get(mark) ?? 0) + 1);
      return acquire(...args);
    };
  }
  /** The connections taken for the request `send` makes with the headers it is given. */
  async function roundTrips(send: (headers: Record<string, string>) => Promise<unknown>): Promise<number> {
    const mark = randomUUID();
    await send({ 'X-Measured': mark });
    return checkouts.get(mark) ?? 0;
  }
  /** The connections taken so far for requests that carried `X-Measured: mark` (streams still open, say). */
  const roundTripsOf = (mark: string) => checkouts.get(mark) ?? 0;
  return { http, server, roundTrips, roundTripsOf };
}
