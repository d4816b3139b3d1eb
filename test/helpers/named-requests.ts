import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { createServer } from 'node:http';
import type { Knex } from 'knex';
import { statementPoolOf } from '../../src/db/prepared.ts';
import type { TestApp } from './app.ts';

/**
 * The app served through a wrapper that runs each request in an async context named by one of its
 * headers (AsyncLocalStorage; the request's body events too, which arrive in the socket's context),
 * so everything the server does for that request, its database work included, carries the name.
 * Used by helpers/round-trips.ts (counting a request's connections) and helpers/held-reads.ts
 * (holding a request's query). `pools`: the main pool, its named statements' pool (db/prepared.ts)
 * and the pool whose commits do not wait for the disk (idempotency claims), with their own.
 */
export function namedRequests(test: TestApp, header: string) {
  const names = new AsyncLocalStorage<string | undefined>();
  const server = createServer((request, response) => {
    const name = request.headers[header.toLowerCase()];
    names.run(typeof name === 'string' ? name : undefined, () => {
      const scope = new AsyncResource('named-request');
      const emit = request.emit;
      request.emit = ((...args: Parameters<typeof emit>) => scope.runInAsyncScope(emit, request, ...args)) as typeof emit;
      test.app(request, response);
    });
  });
  const { db, asyncCommitDb } = test.runtime.engine.dependencies;
  const pools: Knex[] = [...new Set([db, statementPoolOf(db), asyncCommitDb, statementPoolOf(asyncCommitDb)])];
  return { server, pools, nameOfCurrentRequest: () => names.getStore() };
}
