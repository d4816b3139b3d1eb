// First: on a Node line the product does not support, say so before anything else loads.
import './node-support.ts';
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import { createAppServer } from '../rest/app-server.ts';
import { attachRpcWebSocket } from '../rpc/index.ts';
import { createApp } from './app.ts';
import { openRuntime, startBackgroundJobs } from './bootstrap.ts';
import { runPrimary } from './cluster.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { limits } from './limits.ts';
import { createLogger, describeError, type Logger } from './logger.ts';

/** Entry point: configuration, then one server, or with WORKERS > 1 a primary and its workers. */
async function main() {
  const config = loadConfig();
  const log = createLogger(config.LOG_LEVEL);
  // A newcomer needs the admin token to do anything: say where it is, never what it is.
  if (config.generatedSecretFiles.length > 0) {
    log.warn('generated missing secrets and kept them in DATA_DIR; set ADMIN_TOKEN and JWT_SECRET to choose your own', { files: config.generatedSecretFiles });
  }
  if (config.WORKERS > 1 && cluster.isPrimary) return runPrimary(config, log);
  return runServer(config, log);
}

/** Backends, listen, and a graceful shutdown on SIGTERM or SIGINT. */
async function runServer(config: Config, log: Logger) {
  // A signal during start-up (opening the database, migrating) is kept and acted on once the
  // server listens, with the same log lines: without a handler Node would end the process silently.
  let requested: string | undefined;
  let stop = async (signal: string) => {
    if (requested === undefined) log.info('stop requested during start-up: stopping once started', { signal });
    requested ??= signal;
  };
  // A failed step of the stop is said in the log and ends the process, rather than an unhandled
  // rejection's stack trace.
  const stopOn = (signal: string) =>
    stop(signal).catch((error: unknown) => {
      log.error('shutdown failed', { signal, error });
      process.exit(1);
    });
  process.on('SIGTERM', () => void stopOn('SIGTERM'));
  process.on('SIGINT', () => void stopOn('SIGINT'));
  // A worker's primary has migrated already; several workers migrating at once would collide.
  const runtime = await openRuntime(config, log, { migrate: !cluster.isWorker });
  log.info('backends ready', { database: runtime.database.describe, bus: runtime.bus.describe });
  startBackgroundJobs(runtime, config);

  const server = createAppServer(createApp(runtime.engine)).listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const webSockets = attachRpcWebSocket(server, runtime.engine);
  const { port } = server.address() as AddressInfo;
  log.info('listening', { worker: cluster.worker?.id, url: `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${port}`, docs: `/docs` });

  let stopping = false;
  stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    // Stop accepting, let in-flight requests finish, then close pools; force after a grace period.
    const forced = setTimeout(() => {
      log.warn('grace period over, closing remaining connections');
      server.closeAllConnections();
    }, limits.shutdownGraceMs).unref();
    // Streams never finish on their own: end them first (clients resume elsewhere with
    // Last-Event-ID), so that closing the server waits only for ordinary requests.
    await runtime.engine.hub.stop();
    await webSockets.close();
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    clearTimeout(forced);
    await runtime.close();
    log.info('stopped');
    process.exit(0);
  };
  if (requested !== undefined) void stopOn(requested);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    // A database error at start (a migration) is summarised like in every log line: no SQL.
    const summary = error instanceof Error ? describeError(error) : { message: String(error) };
    process.stderr.write(`failed to start: ${typeof summary.message === 'string' ? summary.message : JSON.stringify(summary)}\n`);
  }
  process.exit(1);
});
