import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import supertest from 'supertest';
import { statementPoolOf } from '../../src/db/prepared.ts';
import type { TestApp } from './app.ts';

/**
 * Counts the database round trips one request makes, from outside the engine: the connections
 * the pools hand out for it (each statement outside a transaction takes one). Only the request's
 * own connections count: the server's other work (a job a previous request kicked, the sweeper)
 * takes connections at any time, and counting every one of them failed 3 runs in 13 (issue 28,
 * point 16). The app is served through a wrapper that runs each request in an async context named
 * by its `X-Measured` header (AsyncLocalStorage; the request's body events too), so everything the
 * server does for that request carries the name, and an acquisition is counted only under it.
 *
 * The pools: the main one, its named statements' pool (db/prepared.ts) and the pool whose commits
 * do not wait for the disk (idempotency claims).
 */
export function roundTripMeter(test: TestApp) {
  const measured = new AsyncLocalStorage<string | undefined>();
  const checkouts = new Map<string, number>();
  const server = createServer((request, response) => {
    const mark = request.headers['x-measured'];
    measured.run(typeof mark === 'string' ? mark : undefined, () => {
      // The body arrives in the socket's context: its events are moved into the request's.
      const scope = new AsyncResource('measured-request');
      const emit = request.emit;
      request.emit = ((...args: Parameters<typeof emit>) => scope.runInAsyncScope(emit, request, ...args)) as typeof emit;
      test.app(request, response);
    });
  });
  const http = supertest(server);
  const { db, asyncCommitDb } = test.runtime.engine.dependencies;
  for (const pool of new Set([db, statementPoolOf(db), asyncCommitDb, statementPoolOf(asyncCommitDb)])) {
    const client = pool.client as { acquireConnection: (...args: unknown[]) => Promise<unknown> };
    const acquire = client.acquireConnection.bind(client);
    client.acquireConnection = (...args: unknown[]) => {
      const mark = measured.getStore();
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
