import { randomBytes } from 'node:crypto';
import supertest from 'supertest';
import { createApp } from '../../src/app.ts';
import { openRuntime, type Runtime } from '../../src/bootstrap.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { type DatabaseHandle, openPostgres } from '../../src/db/database.ts';
import { createInProcessBus, createRedisBus, type EventBus } from '../../src/events/bus.ts';
import { createLogger } from '../../src/logger.ts';
import type { CallbackNetwork } from '../../src/callbacks/client.ts';
import { conformingHttp } from './conformance.ts';
import { cloneTemplate } from './databases.ts';
import { openApps } from './open-apps.ts';
import { openTestPglite } from './pglite-template.ts';

export const testAdminToken = 'test-admin-token-0123456789abcdef';
export const testJwtSecret = 'test-jwt-secret-0123456789abcdef';

export interface TestApp {
  runtime: Runtime;
  config: Config;
  app: ReturnType<typeof createApp>;
  http: ReturnType<typeof supertest>;
  /** A clock tests can move forward; the engine reads time only through it. */
  clock: { now: Date; advanceMs(ms: number): void };
  close(): Promise<void>;
}

export const usingRealBackends = () => Boolean(process.env.TEST_DATABASE_URL);

/**
 * The name of a test that sends requests at once. On the embedded database every request is
 * served one at a time, so they never overlap there: the name then says that the test proves only
 * the outcome of many requests, not their behaviour under a real race (CI runs it on PostgreSQL).
 */
export const raceTest = (name: string) => (usingRealBackends() ? name : `${name} [embedded database: requests serialised, outcome only, no overlap]`);

export interface TestAppOptions {
  /** The log (at LOG_LEVEL, default info then) is collected here for the test to read. */
  logLines?: string[];
  callbackNetwork?: Partial<CallbackNetwork>;
  /** A database of the test's own instead of a migrated copy of the run's template. */
  database?: DatabaseHandle;
  /** Whether the app migrates at start; by default only a `database` of the test's own is migrated. */
  migrate?: boolean;
  /** Wraps the bus the app is given (Redis or in-process), for a test that watches how it is used. */
  wrapBus?: (bus: EventBus) => EventBus;
}

/**
 * Starts the whole application on a database of its own: a clone of the migrated template on
 * PostgreSQL when TEST_DATABASE_URL is set, an in-memory PGlite loaded from the migrated template
 * dump otherwise (test/helpers/pglite-template.ts); Redis when TEST_REDIS_URL is set, with a
 * channel prefix of its own.
 */
export async function startTestApp(environment: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const clone = !options.database && process.env.TEST_DATABASE_URL ? await cloneTemplate(process.env.TEST_DATABASE_URL) : null;
  const config = loadConfig({
    NODE_ENV: 'test',
    JWT_SECRET: testJwtSecret,
    ADMIN_TOKEN: testAdminToken,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? (options.logLines ? 'info' : 'silent'),
    PUBLIC_BASE_URL: 'http://127.0.0.1:3000',
    // Every test signs its actors up from 127.0.0.1; the strict production default (a few an hour)
    // is tested on its own in rate-limits.test.ts.
    RATE_LIMIT_SIGNUP_PER_ADDRESS: '100000/3600',
    ...(clone ? { DATABASE_URL: clone.url } : {}),
    ...(process.env.TEST_REDIS_URL ? { REDIS_URL: process.env.TEST_REDIS_URL } : {}),
    ...environment,
  });
  const { database, migrated } = options.database
    ? { database: options.database, migrated: false }
    : clone
      ? { database: await openPostgres(clone.url), migrated: true }
      : await openTestPglite();
  const givenBus = config.REDIS_URL ? createRedisBus(config.REDIS_URL, `test:${randomBytes(4).toString('hex')}:`) : createInProcessBus();
  const bus = options.wrapBus ? options.wrapBus(givenBus) : givenBus;
  const clock = {
    now: new Date(),
    advanceMs(ms: number) {
      this.now = new Date(this.now.getTime() + ms);
    },
  };
  const startedAt = Date.now();
  // A test that reads the log passes `logLines`: every line is kept there instead of printed.
  const logger = options.logLines ? createLogger(config.LOG_LEVEL, (line) => options.logLines!.push(line)) : createLogger(config.LOG_LEVEL);
  const runtime = await openRuntime(config, logger, {
    database,
    bus,
    now: () => new Date(clock.now.getTime() + (Date.now() - startedAt)),
    migrate: options.migrate ?? !migrated,
    callbackNetwork: options.callbackNetwork,
  });
  const app = createApp(runtime.engine);
  const test: TestApp = {
    runtime,
    config,
    app,
    http: conformingHttp(app),
    clock,
    async close() {
      openApps.delete(test);
      await runtime.close();
      await clone?.drop();
    },
  };
  openApps.add(test);
  return test;
}

/**
 * Runs `work` while the bus (the test app's, or the one given) misbehaves: `lose` drops messages
 * silently (published, never delivered), `fail` makes every publish throw (as if the instance
 * died before publishing, or Redis did not answer).
 */
export async function withBrokenBus<T>(target: TestApp | EventBus, mode: 'lose' | 'fail', work: () => Promise<T>): Promise<T> {
  const bus = 'runtime' in target ? target.runtime.bus : target;
  const publish = bus.publish;
  bus.publish =
    mode === 'lose'
      ? async () => {}
      : async () => {
          throw new Error('the bus is down');
        };
  try {
    return await work();
  } finally {
    bus.publish = publish;
  }
}

/**
 * The retention job deletes only events the webhook dispatcher has looked at (docs/webhooks.md):
 * in a running server its worker does that continuously; a test app has no background jobs, so
 * it dispatches first.
 */
export async function pruneOld(app: TestApp) {
  await app.runtime.engine.webhooks.runOnce();
  return app.runtime.engine.retention.runOnce();
}
