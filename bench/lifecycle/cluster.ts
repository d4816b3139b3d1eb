import cluster, { type Worker } from 'node:cluster';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openPostgres } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { BenchServer } from './server.ts';

/**
 * `--workers N`: the server as the product runs it with WORKERS=N. This process becomes the
 * cluster primary (as src/cluster.ts does: migrate once, fork, share one port) and each worker
 * starts the same in-process server as the single-process mode (bench/lifecycle/cluster-worker.ts).
 * Server CPU is the primary's plus every worker's, read from /proc. The instrumented, cost-model
 * and V8 profile passes need the server in this process, so they are skipped in this mode.
 */
const ticksPerSecond = 100; // USER_HZ
const microsecondsPerTick = 1_000_000 / ticksPerSecond;

function workerCpu(pid: number | undefined): NodeJS.CpuUsage {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) * microsecondsPerTick, system: Number(fields[12]) * microsecondsPerTick };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

export async function startClusterServer(databaseUrl: string, redisUrl: string, workers: number): Promise<BenchServer> {
  const database = await openPostgres(databaseUrl);
  try {
    await migrateToLatest(database.db, () => {});
  } finally {
    await database.close();
  }
  cluster.setupPrimary({ exec: fileURLToPath(new URL('./cluster-worker.ts', import.meta.url)), execArgv: ['--import', 'tsx'], args: [databaseUrl, redisUrl] });
  const forked: Worker[] = Array.from({ length: workers }, () => cluster.fork());
  const ports = await Promise.all(
    forked.map(
      (worker) =>
        new Promise<number>((resolve, reject) => {
          worker.once('listening', (address) => resolve(address.port));
          worker.once('exit', (code) => reject(new Error(`bench worker exited with code ${code} before listening`)));
        }),
    ),
  );
  return {
    baseUrl: `http://127.0.0.1:${ports[0]}`,
    describe: `${workers} worker processes (WORKERS=${workers}) on PostgreSQL and Redis`,
    profiler: null,
    cpuUsage() {
      const own = process.cpuUsage();
      return forked
        .map((worker) => workerCpu(worker.process.pid))
        .reduce((sum, usage) => ({ user: sum.user + usage.user, system: sum.system + usage.system }), own);
    },
    async close() {
      await Promise.all(
        forked.map(
          (worker) =>
            new Promise<void>((resolve) => {
              if (worker.isDead()) return resolve();
              worker.once('exit', () => resolve());
              worker.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
