import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from './args.ts';
import { closeCpuSampler, parentPid } from './cpu.ts';
import { runCostModel } from './costmodel.ts';
import { databaseNameOf, otherActivity, postmasterPidOf, recreateDatabase, serverInfo } from './database.ts';
import { childProcessDriver, inProcessDriver } from './driver.ts';
import { createHttpClient } from './http.ts';
import { interleavedRounds } from './interleaved.ts';
import { type PhaseContext, cpuProfilePass, measuredRun, profilePass, rawBefore, rawCeiling } from './phases.ts';
import { printResult } from './print.ts';
import { assembleResult } from './result.ts';
import { startClusterServer } from './cluster.ts';
import { benchAdminToken, startServer } from './server.ts';
import { setupMarket } from './setup.ts';

/**
 * Escrow lifecycle benchmark: the real server (PostgreSQL + Redis) driven over HTTP by C
 * concurrent clients through N full lifecycles, next to a pgbench ceiling of the same SQL work.
 * Phases: setup over REST → pgbench (before) → warmup → measured run → instrumented profile
 * (1 client) → cost model → V8 CPU profile → pgbench (after; the ratio's baseline is the mean of
 * the two pgbench runs). See docs/benchmarks.md for how to read the output.
 */
const options = (() => {
  try {
    return parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
})();
const say = (line: string) => process.stdout.write(`${line}\n`);

/** The code under test: commit and whether src/ or rest/ had uncommitted changes. */
function codeVersion(): { commit: string; uncommittedChanges: boolean } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'rest'], { encoding: 'utf8' }).trim() !== '';
    return { commit, uncommittedChanges: dirty };
  } catch {
    return { commit: 'unknown', uncommittedChanges: false };
  }
}

async function main() {
  try {
    execFileSync(process.env.PGBENCH ?? '/usr/bin/pgbench', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('pgbench not found (set PGBENCH to its path)');
  }
  const startedAt = new Date();
  const code = codeVersion();
  const databaseName = databaseNameOf(options.databaseUrl);
  say(
    `lifecycle bench: N=${options.lifecycles} C=${options.concurrency} warmup=${options.warmup} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), code ${code.commit}${code.uncommittedChanges ? ' + local changes' : ''}`,
  );
  say(`database ${options.databaseUrl} (dropped and recreated), redis ${options.redisUrl}`);
  await recreateDatabase(options.databaseUrl);
  const before = await otherActivity(options.databaseUrl);
  const postmasterPid = await postmasterPidOf(options.databaseUrl, parentPid);
  if (!Number.isFinite(postmasterPid)) say('warning: PostgreSQL is not a local process here; its CPU will read as 0');
  const server =
    options.workers > 1
      ? await startClusterServer(options.databaseUrl, options.redisUrl, options.workers)
      : await startServer(options.databaseUrl, options.redisUrl);
  say(`server listening on ${server.baseUrl}: ${server.describe}`);
  if (!server.profiler && (options.profileLifecycles > 0 || options.costModelRequests > 0 || options.cpuProfileLifecycles > 0)) {
    say('the instrumented, cost-model and V8 profile passes need the server in this process: skipped with --workers');
    Object.assign(options, { profileLifecycles: 0, costModelRequests: 0, cpuProfileLifecycles: 0 });
  }
  const driver = options.inProcessClient ? inProcessDriver() : await childProcessDriver();
  say(`load generator: ${driver.kind}`);

  try {
    // Setup: buyers are credited the price of every lifecycle any one of them might run.
    const setupAt = performance.now();
    const setupHttp = createHttpClient(server.baseUrl, 4);
    const perBuyerMax =
      options.warmup + options.lifecycles + options.rounds * options.roundLifecycles + options.profileLifecycles + options.cpuProfileLifecycles + 10;
    const pairs = await setupMarket(setupHttp, benchAdminToken, options.concurrency, perBuyerMax, say);
    setupHttp.close();
    const setupMs = performance.now() - setupAt;
    const context: PhaseContext = { options, server, driver, pairs, databaseName, postmasterPid, say };
    const rawFirst = await rawBefore(context);

    if (options.warmup > 0) {
      say(`warmup: ${options.warmup} lifecycles (not measured)`);
      const warm = await driver.run({ baseUrl: server.baseUrl, pairs, lifecycles: options.warmup, concurrency: options.concurrency }, () => {});
      if (warm.failed > 0) say(`warmup: ${warm.failed} failed; first error: ${warm.errors[0]}`);
    }
    const run = await measuredRun(context);
    const interleaved = await interleavedRounds(context, rawFirst.clients);
    const profile = options.profileLifecycles > 0 ? await profilePass(context) : null;
    let costModel = null;
    if (options.costModelRequests > 0) {
      say(`cost model: ${options.costModelRequests} × GET /healthz, /api/v1/auth/me and /api/v1/wallet/ at ${options.concurrency} clients`);
      costModel = await runCostModel(
        driver,
        server.profiler!,
        server.baseUrl,
        databaseName,
        postmasterPid,
        pairs[0]!.buyer,
        options.concurrency,
        options.costModelRequests,
      );
    }
    const cpuProfile = options.cpuProfileLifecycles > 0 ? await cpuProfilePass(context) : null;
    const raw = await rawCeiling(context, rawFirst);
    const after = await otherActivity(options.databaseUrl);

    const result = assembleResult({
      options,
      startedAt,
      code,
      postgres: await serverInfo(options.databaseUrl),
      loadGenerator: driver.kind,
      activity: { before, after },
      setupMs,
      run,
      raw,
      interleaved,
      profile,
      costModel,
      cpuProfile,
    });
    const outPath = path.resolve(options.out);
    mkdirSync(path.dirname(outPath), { recursive: true });
    writeFileSync(outPath, `${JSON.stringify(result, null, 2)}\n`);
    printResult(result, path.relative(process.cwd(), outPath), say);
  } finally {
    await driver.close();
    await server.close();
    await closeCpuSampler();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`lifecycle bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
