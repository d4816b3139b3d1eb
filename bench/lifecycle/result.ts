import os from 'node:os';
import type { BenchOptions } from './args.ts';
import type { CostModel } from './costmodel.ts';
import type { CpuProfileSummary } from './cpuprofile.ts';
import type { Activity, ServerInfo } from './database.ts';
import type { InterleavedMeasurement, RawMeasurement, RunMeasurement } from './measurements.ts';
import { type StepProfile, aims, stateChangesPerLifecycle, summarizeLatencies } from './report.ts';
import { round } from './stats.ts';
import { steps } from './load.ts';

/** Everything one run measured, as the JSON document written to .bench-out/lifecycle.json. */
export interface ResultInputs {
  options: BenchOptions;
  startedAt: Date;
  code: { commit: string; uncommittedChanges: boolean };
  postgres: ServerInfo;
  loadGenerator: 'child-process' | 'in-process';
  activity: { before: Activity; after: Activity };
  setupMs: number;
  run: RunMeasurement;
  raw: RawMeasurement;
  interleaved: InterleavedMeasurement | null;
  profile: { steps: Record<string, StepProfile>; background: Record<string, number> } | null;
  costModel: CostModel | null;
  cpuProfile: CpuProfileSummary | null;
}

export function assembleResult(inputs: ResultInputs) {
  const { options, run, raw } = inputs;
  const { load } = run;
  const elapsedS = load.elapsedMs / 1000;
  const lifecyclesPerS = load.lifecycles / elapsedS;
  const stateChangesPerS = lifecyclesPerS * stateChangesPerLifecycle;
  // The ratio's baseline: the mean of pgbench's runs before and after the product, so that the
  // host's drift between them does not land on the ratio. A run that processed nothing (NaN) is left out.
  const rawRates = [raw.before.tps, raw.raw.tps].filter((tps) => Number.isFinite(tps) && tps > 0);
  const rawTps = rawRates.length > 0 ? rawRates.reduce((sum, tps) => sum + tps, 0) / rawRates.length : Number.NaN;
  const ratio = stateChangesPerS / rawTps;
  const latency = summarizeLatencies(load.latencies);
  const perLifecycle = (value: number) => round(value / load.lifecycles, 2);
  const cores = (ms: number) => round(ms / load.elapsedMs, 2);
  const serverCpuMs = (run.serverCpu.user + run.serverCpu.system) / 1000;
  // In-process, the client's CPU is the server process's CPU: count it once, under the server.
  const clientCpuMs = inputs.loadGenerator === 'in-process' ? 0 : load.clientCpuMs;
  // pgbench's and PostgreSQL's CPU and WAL are measured around the run after the product: per its changes.
  const rawStateChanges = raw.raw.transactions;
  // Every step's latency is one state change's: their p99 together is the aim's.
  const stateChange = summarizeLatencies({ stateChange: steps.flatMap((step) => load.latencies[step]) }).stateChange!;
  const ratioMin = aims.ratioMinByConcurrency[options.concurrency] ?? null;
  return {
    meta: {
      date: inputs.startedAt.toISOString(),
      command: `npm run bench:lifecycle -- ${process.argv.slice(2).join(' ')}`.trim(),
      code: inputs.code,
      node: process.version,
      cores: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      memoryGb: round(os.totalmem() / 2 ** 30, 1),
      // Two VMs of one CPU model can differ twofold in speed; the kernel build tells them apart.
      kernel: `${os.type()} ${os.release()}`,
      postgres: inputs.postgres,
      loadGenerator: inputs.loadGenerator,
      options,
      activityBefore: inputs.activity.before,
      activityAfter: inputs.activity.after,
    },
    setup: { pairs: options.concurrency, seconds: round(inputs.setupMs / 1000, 1) },
    run: {
      lifecycles: load.lifecycles,
      failed: load.failed,
      errors: load.errors,
      concurrency: options.concurrency,
      elapsedS: round(elapsedS, 2),
      lifecyclesPerS: round(lifecyclesPerS, 1),
      stateChangesPerLifecycle,
      stateChangesPerS: round(stateChangesPerS, 1),
      latencyMs: latency,
      stateChangeLatencyMs: stateChange,
      batches: run.batches,
      cpu: {
        serverMsPerLifecycle: perLifecycle(serverCpuMs),
        serverMsPerStateChange: round(serverCpuMs / load.lifecycles / stateChangesPerLifecycle, 3),
        postgresMsPerStateChange: round(run.external.postgres / load.lifecycles / stateChangesPerLifecycle, 3),
        // Kernel share: loopback TCP to PostgreSQL, Redis and the client is paid as system time.
        serverSystemMsPerLifecycle: perLifecycle(run.serverCpu.system / 1000),
        clientMsPerLifecycle: perLifecycle(clientCpuMs),
        postgresMsPerLifecycle: perLifecycle(run.external.postgres),
        redisMsPerLifecycle: perLifecycle(run.external.redis),
        allProcessesMsPerStateChange: round(
          (serverCpuMs + clientCpuMs + run.external.postgres + run.external.redis) / load.lifecycles / stateChangesPerLifecycle,
          3,
        ),
        // Cores busy on average during the run.
        serverCores: cores(serverCpuMs),
        clientCores: cores(clientCpuMs),
        postgresCores: cores(run.external.postgres),
        redisCores: cores(run.external.redis),
        machineCores: round(run.machineCores, 2),
        // Busy cores not explained by server, client, PostgreSQL or Redis: other jobs and the kernel.
        otherCores: round(run.machineCores - (serverCpuMs + clientCpuMs + run.external.postgres + run.external.redis) / load.elapsedMs, 2),
        otherCoresBeforeRun: round(run.foreignBefore, 2),
      },
      database: {
        commitsPerLifecycle: perLifecycle(run.counters.xactCommit),
        rollbacksPerLifecycle: perLifecycle(run.counters.xactRollback),
        rowsInsertedPerLifecycle: perLifecycle(run.counters.tupInserted),
        rowsUpdatedPerLifecycle: perLifecycle(run.counters.tupUpdated),
        rowsDeletedPerLifecycle: perLifecycle(run.counters.tupDeleted),
        // Cluster-wide: other databases' writes during the run count too.
        walBytesPerLifecycle: perLifecycle(run.counters.walBytes),
      },
      serverEventLoopDelayMs: run.eventLoopDelayMs,
    },
    raw: {
      tps: round(rawTps, 1),
      tpsBefore: round(raw.before.tps, 1),
      tpsAfter: round(raw.raw.tps, 1),
      clients: raw.clients,
      clientsWhy: raw.clientsWhy,
      transactions: rawStateChanges,
      failed: raw.raw.failed,
      transactionsBefore: raw.before.transactions,
      failedBefore: raw.before.failed,
      latencyAverageMs: raw.raw.latencyAverageMs,
      postgresCpuMsPerStateChange: round(raw.postgresCpuMs / rawStateChanges, 3),
      pgbenchCpuMsPerStateChange: round(raw.pgbenchCpuMs / rawStateChanges, 3),
      machineCores: round(raw.machineCores, 2),
      otherCores: round(raw.machineCores - (raw.postgresCpuMs + raw.pgbenchCpuMs) / raw.elapsedMs, 2),
      otherCoresBeforeRun: round(raw.foreignBefore, 2),
      walBytesPerStateChange: round(raw.walBytes / rawStateChanges, 1),
      statementLatencyMs: raw.raw.statementLatencyMs,
      command: raw.raw.command,
      preparedTps: round(raw.prepared.tps, 1),
      preparedStatementLatencyMs: raw.prepared.statementLatencyMs,
      singleStatementTps: round(raw.singleStatement.tps, 1),
    },
    ratio: round(ratio, 3),
    /** The ratio read in interleaved rounds (interleaved.ts): the whole-run ratio without the drift between its two pgbench runs. */
    interleaved: inputs.interleaved,
    aims: {
      ratio: { min: ratioMin, actual: round(ratio, 3), met: ratioMin === null ? null : ratio >= ratioMin },
      stateChangeP99Ms: {
        max: aims.stateChangeP99MsMax,
        atConcurrency: aims.atConcurrency,
        actual: stateChange.p99,
        measuredAtConcurrency: options.concurrency,
        met: options.concurrency === aims.atConcurrency ? stateChange.p99 <= aims.stateChangeP99MsMax : null,
      },
    },
    profile: inputs.profile && {
      concurrency: 1,
      lifecycles: options.profileLifecycles,
      steps: inputs.profile.steps,
      backgroundRoundTrips: inputs.profile.background,
    },
    costModel: inputs.costModel,
    serverCpuProfile: inputs.cpuProfile && { concurrency: options.concurrency, lifecycles: options.cpuProfileLifecycles, ...inputs.cpuProfile },
  };
}

export type BenchResult = ReturnType<typeof assembleResult>;
