import pg from 'pg';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { connectionsPerInstanceMax } from '../../src/db/database.ts';
import type { BenchOptions } from './args.ts';
import { busyCores, measureIdleLoad, reapedChildrenCpuMs, sampleSystemCpu, trackCpu } from './cpu.ts';
import { type CpuProfileSummary, startCpuProfile, summarizeCpuProfile, writeCpuProfile } from './cpuprofile.ts';
import { countersDelta, databaseCounters, statsSettleMs } from './database.ts';
import type { LoadDriver } from './driver.ts';
import type { Progress } from './load.ts';
import type { RawMeasurement, RunMeasurement } from './measurements.ts';
import { type PgbenchResult, dropRawTables, prepareRawTables, rawSingleStatementScript, runPgbench } from './pgbench.ts';
import { type StepProfile, profileSteps } from './report.ts';
import type { BatchStats, BenchServer } from './server.ts';
import type { Pair } from './setup.ts';

/** The phases of one benchmark run, each measuring what its own section of the report needs. */
export interface PhaseContext {
  options: BenchOptions;
  server: BenchServer;
  driver: LoadDriver;
  pairs: Pair[];
  databaseName: string;
  postmasterPid: number;
  say(line: string): void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Measures foreign CPU load, waiting (up to --wait-quiet seconds) for it to drop below 0.25 cores. */
export async function waitForQuiet({ options, say }: PhaseContext, phase: string): Promise<number> {
  let busy = await measureIdleLoad(2_000);
  for (const deadline = Date.now() + options.waitQuietSeconds * 1000; busy > 0.25 && Date.now() < deadline;) {
    say(`waiting for the machine to go quiet: ${busy.toFixed(2)} cores busy with other work`);
    busy = await measureIdleLoad(5_000);
  }
  say(`cores busy before ${phase} (no load from us): ${busy.toFixed(2)}`);
  return busy;
}

function progressPrinter(say: (line: string) => void, label: string) {
  let last = { done: 0, elapsedMs: 0 };
  return (progress: Progress) => {
    const rate = progress.elapsedMs > 0 ? (progress.done * 1000) / progress.elapsedMs : 0;
    const window = progress.elapsedMs - last.elapsedMs;
    const recent = window > 0 ? ((progress.done - last.done) * 1000) / window : 0;
    last = progress;
    say(
      `${label}: ${progress.done}/${progress.total} lifecycles, ${rate.toFixed(1)} lifecycles/s (last ${(window / 1000).toFixed(1)} s: ${recent.toFixed(1)}/s)`,
    );
  };
}

const loopDelayResolutionMs = 5;

/** The measured run: N lifecycles at C clients, with every CPU and database counter around it. */
export async function measuredRun(context: PhaseContext): Promise<RunMeasurement> {
  const { options, server, driver, pairs, say } = context;
  await sleep(statsSettleMs);
  const foreignBefore = await waitForQuiet(context, 'the run');
  const countersBefore = await databaseCounters(options.databaseUrl);
  const tracker = await trackCpu(context.databaseName, context.postmasterPid);
  const serverCpuBefore = server.cpuUsage();
  const systemBefore = sampleSystemCpu();
  const loopDelay = monitorEventLoopDelay({ resolution: loopDelayResolutionMs });
  const batchesBefore = server.batchStats?.();
  loopDelay.enable();
  say(`run: ${options.lifecycles} lifecycles with ${options.concurrency} concurrent clients`);
  const load = await driver.run(
    { baseUrl: server.baseUrl, pairs, lifecycles: options.lifecycles, concurrency: options.concurrency },
    progressPrinter(say, 'run'),
  );
  loopDelay.disable();
  const batches = batchesBefore ? batchesDuring(batchesBefore, server.batchStats!()) : null;
  if (batches) say(describeBatches(batches));
  const serverCpuAfter = server.cpuUsage();
  const serverCpu = { user: serverCpuAfter.user - serverCpuBefore.user, system: serverCpuAfter.system - serverCpuBefore.system };
  const external = await tracker.stop();
  const machineCores = busyCores(systemBefore, sampleSystemCpu(), load.elapsedMs);
  await sleep(statsSettleMs);
  const counters = countersDelta(countersBefore, await databaseCounters(options.databaseUrl));
  if (load.failed > 0) say(`run: ${load.failed} lifecycles failed; first errors:\n  ${load.errors.join('\n  ')}`);
  // The histogram holds the whole interval between its timer's turns, the resolution included (an
  // idle loop reads about 5 ms at p50): the delay is what exceeds the resolution.
  const ms = (nanoseconds: number) => Number(Math.max(0, nanoseconds / 1e6 - loopDelayResolutionMs).toFixed(2));
  return {
    load,
    serverCpu,
    external,
    machineCores,
    foreignBefore,
    counters,
    // With --workers this process only hands out connections: its event loop says nothing.
    eventLoopDelayMs: server.profiler ? { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) } : null,
    batches,
  };
}

/** The batches between two readings of the batcher's counters (the largest is the server's whole life's). */
function batchesDuring(before: BatchStats, after: BatchStats): NonNullable<RunMeasurement['batches']> {
  const sizes = Object.fromEntries(
    Object.entries(after.sizes)
      .map(([size, count]) => [size, count - (before.sizes[size] ?? 0)] as const)
      .filter(([, count]) => count > 0),
  );
  return {
    changes: after.changes - before.changes,
    statements: after.batches - before.batches,
    largest: after.largest,
    splits: after.splits - before.splits,
    rejoins: after.rejoins - before.rejoins,
    rejoinsTimedOut: after.rejoinsTimedOut - before.rejoinsTimedOut,
    rejoinsSkipped: after.rejoinsSkipped - before.rejoinsSkipped,
    trials: after.trials,
    sizes,
  };
}

function describeBatches(batches: NonNullable<RunMeasurement['batches']>): string {
  const mean = batches.statements > 0 ? (batches.changes / batches.statements).toFixed(2) : '-';
  const sizes = Object.entries(batches.sizes)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([size, count]) => `${size === '1' ? '1' : `${size}-${Number(size) * 2 - 1}`}: ${count}`)
    .join(', ');
  return `group commit: ${batches.changes} state changes in ${batches.statements} statements (mean ${mean}, largest ${batches.largest}, splits ${batches.splits}, waits for the answered ${batches.rejoins}, of them ran out ${batches.rejoinsTimedOut}, not waited ${batches.rejoinsSkipped}${describeTrials(batches.trials)}); statements by size ${sizes}`;
}

/** The batcher's trials of waiting for the answered: its choice, and the rates of the last trial that decided. */
function describeTrials(trials: NonNullable<RunMeasurement['batches']>['trials']): string {
  if (!trials) return '';
  const rates = trials.lastRates
    ? `, last ${Math.round(trials.lastRates.waiting)} changes/s waiting against ${Math.round(trials.lastRates.notWaiting)} not`
    : '';
  return `; trials ${trials.trials} (${trials.trialsUndecided} undecided, ${trials.switches} switches${rates}), now ${trials.waits ? 'waiting' : 'not waiting'}`;
}

/** Instrumented pass at one client: round trips and where a request's time goes, unloaded. */
export async function profilePass({
  options,
  server,
  driver,
  pairs,
  say,
}: PhaseContext): Promise<{ steps: Record<string, StepProfile>; background: Record<string, number> }> {
  say(`profile: ${options.profileLifecycles} lifecycles at 1 client, counting PostgreSQL round trips and Redis publishes per request`);
  const profiler = server.profiler!;
  profiler.reset();
  profiler.start();
  await driver.run({ baseUrl: server.baseUrl, pairs, lifecycles: options.profileLifecycles, concurrency: 1 }, () => {});
  await sleep(500); // let the publisher's batched outbox marking run inside the window
  profiler.stop();
  return { steps: profileSteps(profiler.samples), background: Object.fromEntries(profiler.background) };
}

/** V8 CPU profile of the server under the run's load, in its own pass (profiling slows it). */
export async function cpuProfilePass({ options, server, driver, pairs, say }: PhaseContext): Promise<CpuProfileSummary> {
  say(`cpu profile: ${options.cpuProfileLifecycles} lifecycles at ${options.concurrency} clients with the V8 sampling profiler on the server`);
  const stop = await startCpuProfile();
  await driver.run({ baseUrl: server.baseUrl, pairs, lifecycles: options.cpuProfileLifecycles, concurrency: options.concurrency }, () => {});
  const profile = await stop();
  const file = path.join(path.dirname(path.resolve(options.out)), 'lifecycle-server.cpuprofile');
  mkdirSync(path.dirname(file), { recursive: true });
  writeCpuProfile(file, profile);
  return summarizeCpuProfile(profile);
}

/** pgbench's client count, and why it is fewer than the run's (null when it is not). */
export interface RawClients {
  clients: number;
  clientsWhy: string | null;
}

const rawOutDirectory = (options: BenchOptions) => path.dirname(path.resolve(options.out));
const describeRaw = (options: BenchOptions, { clients, clientsWhy }: RawClients) =>
  `pgbench -M extended -c ${clients} -j ${Math.min(2, clients)} -T ${options.pgbenchSeconds} on bench_* copies of the tables${clientsWhy ? ` (${clientsWhy})` : ''}`;

/**
 * The raw ceiling's first run, before the product's warm-up: on this shared machine pgbench's own
 * rate moved between 965 and 1,617 steps/s within minutes, so one run after the product swung the
 * ratio by a quarter for reasons not the product's; the ratio's baseline is the mean of this run
 * and the one after (rawCeiling). Before the warm-up, so the warm-up absorbs what pgbench leaves
 * behind (written pages, WAL, a machine just busy); the bench_* copies are dropped again, so that
 * no autovacuum of them runs, as a backend of the bench database, during the measured run.
 */
export async function rawBefore(context: PhaseContext): Promise<{ before: PgbenchResult; clients: RawClients }> {
  const { options, say } = context;
  const clients = await pgbenchClients(options.databaseUrl, options.concurrency, options.workers);
  say(`raw ceiling before the product: ${describeRaw(options, clients)}`);
  await prepareRawTables(options.databaseUrl);
  await waitForQuiet(context, 'pgbench before the product');
  const before = await runPgbench(options.databaseUrl, clients.clients, options.pgbenchSeconds, rawOutDirectory(options));
  await dropRawTables(options.databaseUrl);
  say(`raw ceiling before the product: ${before.tps.toFixed(1)} state changes/s`);
  return { before, clients };
}

/**
 * The raw ceiling's run after the product (pgbench on bench_* copies, prepared afresh), with the
 * CPU, WAL and machine figures of pgbench and PostgreSQL; then two reference variants of the same
 * work, after only. It uses the clients of the run before, unless fewer connections are free now.
 */
export async function rawCeiling(context: PhaseContext, first: { before: PgbenchResult; clients: RawClients }): Promise<RawMeasurement> {
  const { options, say } = context;
  const outDirectory = rawOutDirectory(options);
  const now = await pgbenchClients(options.databaseUrl, options.concurrency, options.workers);
  const { clients, clientsWhy } =
    now.clients < first.clients.clients ? { ...now, clientsWhy: `${now.clientsWhy}; the run before the product had ${first.clients.clients}` } : first.clients;
  say(`raw ceiling after the product: ${describeRaw(options, { clients, clientsWhy })}`);
  await prepareRawTables(options.databaseUrl);
  const foreignBefore = await waitForQuiet(context, 'pgbench');
  const countersBefore = await databaseCounters(options.databaseUrl);
  const tracker = await trackCpu(context.databaseName, context.postmasterPid);
  const pgbenchCpuBefore = reapedChildrenCpuMs();
  const systemBefore = sampleSystemCpu();
  const at = performance.now();
  const raw = await runPgbench(options.databaseUrl, clients, options.pgbenchSeconds, outDirectory);
  const elapsedMs = performance.now() - at;
  const postgresCpuMs = (await tracker.stop()).postgres;
  const machineCores = busyCores(systemBefore, sampleSystemCpu(), elapsedMs);
  const pgbenchCpuMs = reapedChildrenCpuMs() - pgbenchCpuBefore;
  const walBytes = (await databaseCounters(options.databaseUrl)).walBytes - countersBefore.walBytes;
  // For reference only: named prepared statements (parsed and planned once per connection), and
  // the same writes sent as one autocommit statement.
  const prepared = await runPgbench(options.databaseUrl, clients, options.pgbenchSeconds, outDirectory, 'prepared');
  const singleStatement = await runPgbench(
    options.databaseUrl,
    clients,
    options.pgbenchSeconds,
    outDirectory,
    'extended',
    rawSingleStatementScript(),
    'raw-single-statement',
  );
  const before = first.before;
  return { before, raw, prepared, singleStatement, postgresCpuMs, pgbenchCpuMs, elapsedMs, machineCores, foreignBefore, walBytes, clients, clientsWhy };
}

/**
 * pgbench opens one connection per client: at 256 clients that is more than PostgreSQL's usual
 * max_connections (100). The baseline then runs with as many clients as the database has free
 * connections (less a few for superusers and the bench's own, and those the server's pools may
 * still open: before the warm-up they have not grown yet), and says so; on 2 cores pgbench is
 * saturated long before that many clients.
 */
async function pgbenchClients(databaseUrl: string, concurrency: number, workers: number): Promise<RawClients> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ max: number; used: number; reserved: number; ours: number }>(
      "SELECT current_setting('max_connections')::int AS max, current_setting('superuser_reserved_connections')::int AS reserved, (SELECT count(*)::int FROM pg_stat_activity) AS used, " +
        '(SELECT count(*)::int FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()) AS ours',
    );
    const { max, used, reserved, ours } = rows[0]!;
    const serverMayOpen = Math.max(0, workers * connectionsPerInstanceMax() - ours);
    const free = Math.max(1, max - used - reserved - 5 - serverMayOpen);
    if (concurrency <= free) return { clients: concurrency, clientsWhy: null };
    return { clients: free, clientsWhy: `${concurrency} clients would pass max_connections ${max}; ${free} were free` };
  } finally {
    await client.end();
  }
}
