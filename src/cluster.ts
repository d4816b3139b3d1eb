import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config.ts';
import { connectionBudgetProblem, openPostgres } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { limits } from './limits.ts';
import type { Logger } from './logger.ts';

/**
 * The primary process of `WORKERS` > 1: it migrates the database once, then forks the workers,
 * which all listen on the same port (node:cluster hands connections out round-robin). One Node
 * process runs JavaScript on one core, so on a machine with more cores more workers serve more
 * requests; the instances cooperate exactly as instances behind a load balancer do (PostgreSQL
 * for state, Redis for events). A worker that dies is replaced; SIGTERM stops all of them
 * gracefully.
 */
export async function runPrimary(config: Config, log: Logger): Promise<void> {
  const database = await openPostgres(config.DATABASE_URL!);
  try {
    await migrateToLatest(database.db, (line) => log.info(line));
    const [setting] = ((await database.db.raw('SHOW max_connections')) as { rows: { max_connections: string }[] }).rows;
    const problem = connectionBudgetProblem(config.WORKERS, Number(setting?.max_connections));
    if (problem) log.warn(problem);
  } finally {
    await database.close();
  }
  let stopping = false;
  const live = () => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && !worker.isDead());

  /** SIGTERM to every worker, each given the grace period of its own shutdown, then SIGKILL. */
  const stop = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping workers', { reason });
    await Promise.all(
      live().map(
        (worker) =>
          new Promise<void>((resolve) => {
            const forced = setTimeout(() => worker.process.kill('SIGKILL'), limits.shutdownGraceMs + limits.workerStopMarginMs).unref();
            worker.once('exit', () => {
              clearTimeout(forced);
              resolve();
            });
            worker.process.kill('SIGTERM');
          }),
      ),
    );
    log.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void stop('SIGTERM', 0));
  process.on('SIGINT', () => void stop('SIGINT', 0));

  const recentExits: number[] = [];
  const fork = () => cluster.fork().on('exit', (code, signal) => onExit(code, signal));
  const onExit = (code: number | null, signal: string | null) => {
    if (stopping) return;
    const now = Date.now();
    recentExits.push(now);
    while (recentExits[0]! < now - limits.workerRestartWindowMs) recentExits.shift();
    // A worker that cannot start (a bad database URL, say) would otherwise be restarted forever.
    if (recentExits.length > limits.workerRestartsPerWindowMax) {
      log.error('workers keep exiting; giving up', { code, signal });
      void stop('workers keep exiting', 1);
      return;
    }
    // A pause before the restart, so a short outage of PostgreSQL or Redis at start does not use
    // up the restart budget within a second.
    log.error('worker exited; starting another', { code, signal, inMs: limits.workerRestartDelayMs });
    setTimeout(() => {
      if (!stopping) fork();
    }, limits.workerRestartDelayMs);
  };
  for (let index = 0; index < config.WORKERS; index++) fork();
  log.info('primary started', { workers: config.WORKERS });
}
