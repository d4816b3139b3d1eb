import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import type { EventBus } from '../../src/events/bus.ts';

/**
 * Counts what one HTTP request costs the server, attributed by AsyncLocalStorage: every
 * PostgreSQL round trip (pg.Client#query, so BEGIN and COMMIT count too), its wall time, the
 * normalized SQL, and every Redis publish. pg and the bus are patched in this process only, and
 * only when start() or countRoundTrips() is first called, so the measured run (before either)
 * runs unpatched code.
 */
export interface RequestSample {
  step: string;
  startedAt: number;
  totalMs: number;
  dbRoundTrips: number;
  dbMs: number;
  redisPublishes: number;
  redisMs: number;
  statements: string[];
}

interface Context {
  sample: RequestSample;
}

export interface Profiler {
  readonly enabled: boolean;
  /** Patches pg and the bus (once) and records from now on. */
  start(): void;
  /** Patches pg (once) so that totalRoundTrips counts, without recording per request. */
  countRoundTrips(): void;
  /** Every pg round trip of this process since the patch went in. */
  readonly totalRoundTrips: number;
  samples: RequestSample[];
  /** Round trips made outside any request (the publisher's batched outbox marking, the sweeper). */
  background: Map<string, number>;
  /** Runs one request's handling inside its own attribution context. */
  wrap(step: string, run: (done: (callback: () => void) => void) => void): void;
  reset(): void;
  /** Stops recording and turns async context tracking off again (it costs CPU on every promise). */
  stop(): void;
}

const storage = new AsyncLocalStorage<Context>();

/** Strips literals so that statements group by shape (knex already uses $n placeholders). */
export function normalizeSql(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/'(?:[^']|'')*'/g, "'?'")
    .replace(/\(\$\d+(?:, \$\d+)*\)/g, '($…)')
    .replace(/\$\d+/g, '$n')
    .trim()
    .slice(0, 160);
}

export function createProfiler(bus: EventBus): Profiler {
  let patched = false;
  const ensurePatched = () => {
    if (!patched) patch();
    patched = true;
  };
  const profiler: Profiler = {
    enabled: false,
    totalRoundTrips: 0,
    start() {
      ensurePatched();
      (profiler as { enabled: boolean }).enabled = true;
    },
    countRoundTrips: ensurePatched,
    samples: [],
    background: new Map(),
    wrap(step, run) {
      if (!profiler.enabled) return run((callback) => callback());
      const sample: RequestSample = { step, startedAt: performance.now(), totalMs: 0, dbRoundTrips: 0, dbMs: 0, redisPublishes: 0, redisMs: 0, statements: [] };
      storage.run({ sample }, () =>
        run((callback) => {
          sample.totalMs = performance.now() - sample.startedAt;
          profiler.samples.push(sample);
          callback();
        }),
      );
    },
    reset() {
      profiler.samples = [];
      profiler.background = new Map();
    },
    stop() {
      (profiler as { enabled: boolean }).enabled = false;
      storage.disable();
    },
  };

  function patch() {
    const originalQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
    pg.Client.prototype.query = function patchedQuery(this: pg.Client, ...args: unknown[]) {
      (profiler as { totalRoundTrips: number }).totalRoundTrips += 1;
      if (!profiler.enabled) return originalQuery.apply(this, args);
      const first = args[0] as string | { text?: string } | undefined;
      const statement = normalizeSql(typeof first === 'string' ? first : (first?.text ?? '?'));
      const sample = storage.getStore()?.sample;
      if (!sample) {
        profiler.background.set(statement, (profiler.background.get(statement) ?? 0) + 1);
        return originalQuery.apply(this, args);
      }
      sample.dbRoundTrips += 1;
      sample.statements.push(statement);
      const startedAt = performance.now();
      const finish = () => {
        sample.dbMs += performance.now() - startedAt;
      };
      const last = args.at(-1);
      if (typeof last === 'function') {
        args[args.length - 1] = function wrappedCallback(this: unknown, ...results: unknown[]) {
          finish();
          return (last as (...values: unknown[]) => unknown).apply(this, results);
        };
        return originalQuery.apply(this, args);
      }
      const result = originalQuery.apply(this, args);
      if (result && typeof (result as Promise<unknown>).then === 'function') (result as Promise<unknown>).then(finish, finish);
      return result;
    } as typeof pg.Client.prototype.query;

    const originalPublish = bus.publish.bind(bus);
    (bus as { publish: EventBus['publish'] }).publish = async (channel, message) => {
      const sample = profiler.enabled ? storage.getStore()?.sample : undefined;
      if (!sample) return originalPublish(channel, message);
      const startedAt = performance.now();
      try {
        return await originalPublish(channel, message);
      } finally {
        sample.redisPublishes += 1;
        sample.redisMs += performance.now() - startedAt;
      }
    };
  }

  return profiler;
}
