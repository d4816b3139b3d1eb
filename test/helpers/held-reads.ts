import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { createServer } from 'node:http';
import supertest from 'supertest';
import { statementPoolOf } from '../../src/db/prepared.ts';
import type { TestApp } from './app.ts';

/**
 * Holds the answer of one request's query until the test lets it through: the query has run in the
 * database (it read what was there then), and the server gets its rows only on release. The app is
 * served through a wrapper that runs each request in an async context named by its `X-Held` header
 * (as helpers/round-trips.ts does), and the pools' query function waits, for a query of a request
 * so named whose SQL matches the hold's pattern.
 */
export function readHolder(test: TestApp) {
  const named = new AsyncLocalStorage<string | undefined>();
  const holds = new Map<string, { pattern: RegExp; reached: boolean; gate: Promise<void> }>();
  const server = createServer((request, response) => {
    const mark = request.headers['x-held'];
    named.run(typeof mark === 'string' ? mark : undefined, () => {
      const scope = new AsyncResource('held-request');
      const emit = request.emit;
      request.emit = ((...args: Parameters<typeof emit>) => scope.runInAsyncScope(emit, request, ...args)) as typeof emit;
      test.app(request, response);
    });
  });
  const { db, asyncCommitDb } = test.runtime.engine.dependencies;
  for (const pool of new Set([db, statementPoolOf(db), asyncCommitDb, statementPoolOf(asyncCommitDb)])) {
    const client = pool.client as { _query: (connection: unknown, query: { sql: string }) => Promise<unknown> };
    const run = client._query.bind(client);
    client._query = async (connection, query) => {
      const result = await run(connection, query);
      const mark = named.getStore();
      const hold = mark === undefined ? undefined : holds.get(mark);
      if (hold && hold.pattern.test(query.sql)) {
        hold.reached = true;
        await hold.gate;
      }
      return result;
    };
  }
  /** Holds the answer of the first query matching `pattern` of requests sent with `X-Held: mark`. */
  function hold(mark: string, pattern: RegExp) {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const entry = { pattern, reached: false, gate };
    holds.set(mark, entry);
    return {
      reached: () => entry.reached,
      release: () => {
        holds.delete(mark);
        release();
      },
    };
  }
  return { http: supertest(server), hold };
}
