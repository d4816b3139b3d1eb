import { performance } from 'node:perf_hooks';
import { createJwtService } from './auth/jwt.ts';
import type { Config } from './config.ts';
import { type DatabaseHandle, openPglite, openPostgres } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { type EventBus, createInProcessBus, createRedisBus } from './events/bus.ts';
import { createEngine, type Engine } from './engine/index.ts';
import type { Logger } from './logger.ts';
import type { CallbackNetwork } from './callbacks/client.ts';

/**
 * Opens the backends the configuration names (PostgreSQL or embedded PGlite; Redis or the
 * in-process bus), migrates, and builds the engine. Shared by the server, the CLI and tests.
 */
export interface Runtime {
  engine: Engine;
  database: DatabaseHandle;
  bus: EventBus;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  database?: DatabaseHandle;
  bus?: EventBus;
  now?: () => Date;
  migrate?: boolean;
  callbackNetwork?: Partial<CallbackNetwork>;
}

/** The configured database, saying what it opens and how long that took (the embedded one's first start initialises it). */
async function openConfiguredDatabase(config: Config, log: Logger): Promise<DatabaseHandle> {
  const startedAt = performance.now();
  if (config.DATABASE_URL) {
    log.info('opening PostgreSQL (DATABASE_URL)');
    const database = await openPostgres(config.DATABASE_URL);
    log.info('PostgreSQL open', { took_ms: Math.round(performance.now() - startedAt) });
    return database;
  }
  log.info('opening the embedded database (no DATABASE_URL); a first start creates it, which takes a few seconds', { directory: config.DATA_DIR });
  const database = await openPglite({ directory: config.DATA_DIR });
  log.info('embedded database open', { took_ms: Math.round(performance.now() - startedAt) });
  return database;
}

/**
 * The background jobs every serving instance runs: the sweeper, the relay, the webhook dispatcher
 * and sender, retention, auto-accept and embeddings. One list, so that what the benchmarks measure
 * (bench/lifecycle) is the server that src/main.ts starts.
 */
export function startBackgroundJobs(runtime: Runtime, config: Config): void {
  runtime.engine.sweeper.start(config.SWEEPER_INTERVAL_MS);
  runtime.engine.relay.start();
  runtime.engine.webhooks.start();
  runtime.engine.retention.start();
  runtime.engine.autoAcceptJobs.start();
  runtime.engine.embeddings.start();
}

export async function openRuntime(config: Config, log: Logger, options: RuntimeOptions = {}): Promise<Runtime> {
  const database = options.database ?? (await openConfiguredDatabase(config, log));
  const bus = options.bus ?? (config.REDIS_URL ? createRedisBus(config.REDIS_URL) : createInProcessBus());
  try {
    if (options.migrate !== false) await migrateToLatest(database.db, (line) => log.info(line));
  } catch (error) {
    await Promise.allSettled([database.close(), bus.close()]);
    throw error;
  }
  const engine = await createEngine({
    db: database.db,
    asyncCommitDb: database.asyncCommitDb,
    bus,
    config,
    jwt: createJwtService(config),
    log,
    now: options.now ?? (() => new Date()),
    callbackNetwork: options.callbackNetwork,
  });
  return {
    engine,
    database,
    bus,
    async close() {
      await engine.close().catch(() => {});
      await Promise.allSettled([database.close(), bus.close()]);
    },
  };
}
