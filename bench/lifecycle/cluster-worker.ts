import { startServer } from './server.ts';

/** One worker of `--workers N` (bench/lifecycle/cluster.ts): the single-process server, without migrating. */
const [databaseUrl, redisUrl] = process.argv.slice(2) as [string, string];
const server = await startServer(databaseUrl, redisUrl, { migrate: false });
process.once('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
