import supertest from 'supertest';
import type { TestApp } from './app.ts';
import { namedRequests } from './named-requests.ts';

/**
 * Holds the answer of one request's query until the test lets it through: the query has run in the
 * database (it read what was there then), and the server gets its rows only on release. Each request
 * runs in an async context named by its `X-Held` header (helpers/named-requests.ts), and the pools'
 * query function waits for a query of a request so named whose SQL matches the hold's pattern.
 */
export function readHolder(test: TestApp) {
  const holds = new Map<string, { pattern: RegExp; reached: boolean; gate: Promise<void> }>();
  const { server, pools, nameOfCurrentRequest } = namedRequests(test, 'X-Held');
  for (const pool of pools) {
    const client = pool.client as { _query: (connection: unknown, query: { sql: string }) => Promise<unknown> };
    const run = client._query.bind(client);
    client._query = async (connection, query) => {
      const result = await run(connection, query);
      const mark = nameOfCurrentRequest();
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
