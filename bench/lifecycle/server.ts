import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.ts';
import { createAppServer } from '../../rest/app-server.ts';
import { openRuntime, startBackgroundJobs, type Runtime } from '../../src/bootstrap.ts';
import { loadConfig, rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { createProfiler, type Profiler } from './profiler.ts';

/**
 * The real server, started in this process exactly as src/main.ts does it (openRuntime, createApp
 * and createAppServer, every background job running: startBackgroundJobs), on PostgreSQL and
 * Redis, listening on a loopback port. The only addition is the request wrapper that lets the
 * profiler attribute queries to a request.
 */
export const benchJwtSecret = 'bench-jwt-secret-0123456789abcdef';
export const benchAdminToken = 'bench-admin-token-0123456789abcdef';

/** The group commit's counters (engine/money/batcher.ts), as the engine reports them. */
export type BatchStats = ReturnType<Runtime['engine']['transitions']['batchStats']>;

export interface BenchServer {
  baseUrl: string;
  describe: string;
  /** Null when the server runs in other processes (--workers). */
  profiler: Profiler | null;
  /** CPU used by the server so far (this process, or the cluster primary and its workers). */
  cpuUsage(): NodeJS.CpuUsage;
  /** The group commit's batches so far (engine/money/batcher.ts); absent when the server runs in other processes. */
  batchStats?(): BatchStats;
  close(): Promise<void>;
}

/** The lifecycle step a request belongs to, from its method and path. */
export function stepOf(method: string | undefined, url: string | undefined): string {
  const path = (url ?? '').split('?')[0]!;
  if (method !== 'POST') return 'other';
  if (path === '/api/v1/transactions') return 'create';
  const match = /^\/api\/v1\/transactions\/[^/]+\/([a-z_]+)$/.exec(path);
  return match ? match[1]! : 'other';
}

export async function startServer(
  databaseUrl: string,
  redisUrl: string,
  options: { migrate?: boolean } = {},
): Promise<BenchServer & { runtime: Runtime; profiler: Profiler }> {
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    JWT_SECRET: benchJwtSecret,
    ADMIN_TOKEN: benchAdminToken,
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: '0',
    PUBLIC_BASE_URL: 'http://127.0.0.1',
    // The bench measures the engine's ceiling with a few credentials on 127.0.0.1, far beyond
    // what any one client is allowed (bench/login measures the limits themselves).
    ...Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), 'off'])),
  });
  const log = createLogger(config.LOG_LEVEL);
  const runtime = await openRuntime(config, log, { migrate: options.migrate });
  startBackgroundJobs(runtime, config);
  const profiler = createProfiler(runtime.bus);
  const app = createApp(runtime.engine);
  // Made as src/main.ts makes it (requests and responses with express's prototypes from the start).
  const server = createAppServer(app, (request, response) => {
    profiler.wrap(stepOf(request.method, request.url), (done) => {
      response.once('finish', () => done(() => {}));
      app(request as never, response as never);
    });
  });
  // Phases are separated by idle gaps (pgbench, profiling); keep client sockets open across them.
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    describe: `this process (${runtime.database.describe}, ${runtime.bus.describe})`,
    runtime,
    profiler,
    cpuUsage: () => process.cpuUsage(),
    batchStats: () => runtime.engine.transitions.batchStats(),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
}
