import { steps } from './load.ts';
import type { RequestSample } from './profiler.ts';
import type { BenchResult } from './result.ts';
import { type Summary, round, summarize } from './stats.ts';

/** Summaries and the printed report. */
export const stateChangesPerLifecycle = 5; // create + freeze + accept + deliver + confirm

export const aims = { ratioMin: 0.6, lifecycleP99MsMax: 100, atConcurrency: 8 };

export interface StepProfile {
  requests: number;
  dbRoundTrips: number;
  redisPublishes: number;
  meanTotalMs: number;
  meanDbMs: number;
  meanRedisMs: number;
  /** Statements of one request of this step, in order (all requests of a step issue the same). */
  statements: string[];
}

export function profileSteps(samples: RequestSample[]): Record<string, StepProfile> {
  const byStep = new Map<string, RequestSample[]>();
  for (const sample of samples) byStep.set(sample.step, [...(byStep.get(sample.step) ?? []), sample]);
  const result: Record<string, StepProfile> = {};
  for (const step of [...steps, 'other']) {
    const list = byStep.get(step);
    if (!list || list.length === 0) continue;
    const mean = (pick: (sample: RequestSample) => number) => round(list.reduce((sum, sample) => sum + pick(sample), 0) / list.length, 3);
    result[step] = {
      requests: list.length,
      dbRoundTrips: mean((sample) => sample.dbRoundTrips),
      redisPublishes: mean((sample) => sample.redisPublishes),
      meanTotalMs: mean((sample) => sample.totalMs),
      meanDbMs: mean((sample) => sample.dbMs),
      meanRedisMs: mean((sample) => sample.redisMs),
      statements: list.at(-1)!.statements,
    };
  }
  return result;
}

const pad = (value: unknown, width: number) => String(value).padStart(width);
const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

export function latencyTable(latency: Record<string, Summary>): string {
  const header = `${'step'.padEnd(10)}${pad('count', 7)}${pad('p50 ms', 9)}${pad('p90 ms', 9)}${pad('p99 ms', 9)}${pad('max ms', 9)}${pad('mean ms', 9)}`;
  const lines = Object.entries(latency).map(
    ([step, s]) => `${step.padEnd(10)}${pad(s.count, 7)}${pad(fixed(s.p50), 9)}${pad(fixed(s.p90), 9)}${pad(fixed(s.p99), 9)}${pad(fixed(s.max), 9)}${pad(fixed(s.mean), 9)}`,
  );
  return [header, ...lines].join('\n');
}

export function profileTable(profile: Record<string, StepProfile>): string {
  const header = `${'step'.padEnd(10)}${pad('requests', 9)}${pad('db trips', 10)}${pad('redis', 7)}${pad('server ms', 11)}${pad('in db ms', 10)}${pad('redis ms', 10)}`;
  const lines = Object.entries(profile).map(
    ([step, p]) => `${step.padEnd(10)}${pad(p.requests, 9)}${pad(fixed(p.dbRoundTrips, 1), 10)}${pad(fixed(p.redisPublishes, 1), 7)}${pad(fixed(p.meanTotalMs, 2), 11)}${pad(fixed(p.meanDbMs, 2), 10)}${pad(fixed(p.meanRedisMs, 2), 10)}`,
  );
  return [header, ...lines].join('\n');
}

export function summarizeLatencies(latencies: Record<string, number[]>): Record<string, Summary> {
  return Object.fromEntries(Object.entries(latencies).map(([step, samples]) => [step, roundSummary(summarize(samples))]));
}

function roundSummary(summary: Summary): Summary {
  return Object.fromEntries(Object.entries(summary).map(([key, value]) => [key, round(value, 2)])) as unknown as Summary;
}

/** The printed report: the table of docs/benchmarks.md. */
export function printResult(result: BenchResult, outPath: string, say: (line: string) => void) {
  const { run, raw, meta } = result;
  const { cpu, database } = run;
  const concurrency = meta.options.concurrency;
  const inProcess = meta.loadGenerator === 'in-process';
  say('');
  say(`=== lifecycle bench: ${run.lifecycles} lifecycles, ${concurrency} clients, ${meta.cores} cores, server ${meta.options.workers > 1 ? `${meta.options.workers} worker processes` : 'one process'}, load generator ${meta.loadGenerator} ===`);
  say(latencyTable(run.latencyMs));
  say('');
  say(`lifecycles/s            ${run.lifecyclesPerS}`);
  say(`state changes/s         ${run.stateChangesPerS}   (${stateChangesPerLifecycle} per lifecycle: create + freeze + accept + deliver + confirm; = HTTP requests/s)`);
  say(`raw state changes/s     ${raw.tps}   (pgbench -M extended -c ${concurrency}: guarded UPDATE RETURNING + 2 balance UPDATEs + 2 ledger INSERTs + 1 outbox INSERT per COMMIT)`);
  say(`  (for reference: same script -M prepared ${raw.preparedTps}/s; same writes as one CTE statement ${raw.singleStatementTps}/s)`);
  say(`ratio                   ${result.ratio}   (aim >= ${aims.ratioMin}: ${result.aims.ratio.met ? 'met' : 'NOT met'})`);
  const p99 = result.aims.lifecycleP99Ms;
  const verdict = p99.met === null ? `not judged at ${concurrency} clients` : p99.met ? 'met' : 'NOT met';
  say(`lifecycle p99           ${p99.actual} ms   (aim < ${aims.lifecycleP99MsMax} ms at ${aims.atConcurrency} clients: ${verdict})`);
  say(`failed lifecycles       ${run.failed}`);
  say('');
  say(`CPU per lifecycle       server ${cpu.serverMsPerLifecycle} ms (${cpu.serverSystemMsPerLifecycle} in the kernel), client ${inProcess ? '(in the server process)' : `${cpu.clientMsPerLifecycle} ms`}, postgres ${cpu.postgresMsPerLifecycle} ms, redis ${cpu.redisMsPerLifecycle} ms`);
  say(`cores busy (of ${meta.cores})      server ${cpu.serverCores}, client ${cpu.clientCores}, postgres ${cpu.postgresCores}, redis ${cpu.redisCores}; whole machine ${cpu.machineCores} (other work ${cpu.otherCores}, before the run ${cpu.otherCoresBeforeRun})`);
  say(`raw CPU per state change postgres ${raw.postgresCpuMsPerStateChange} ms + pgbench ${raw.pgbenchCpuMsPerStateChange} ms; machine ${raw.machineCores} cores busy, other work ${raw.otherCores} (real run per state change: postgres ${round(cpu.postgresMsPerLifecycle / stateChangesPerLifecycle, 3)} ms, all processes ${cpu.allProcessesMsPerStateChange} ms)`);
  say(`database per lifecycle  ${database.commitsPerLifecycle} commits (autocommit statements count), ${database.rowsInsertedPerLifecycle} rows inserted, ${database.rowsUpdatedPerLifecycle} updated, ${database.rowsDeletedPerLifecycle} deleted, ${database.walBytesPerLifecycle} WAL bytes (raw: ${raw.walBytesPerStateChange} per state change)`);
  if (run.serverEventLoopDelayMs) say(`server event loop delay p50 ${run.serverEventLoopDelayMs.p50} ms, p99 ${run.serverEventLoopDelayMs.p99} ms`);
  if (result.profile) {
    say('');
    say(`per request at 1 client (instrumented, ${result.profile.lifecycles} lifecycles):`);
    say(profileTable(result.profile.steps));
    const trips = steps.reduce((sum, step) => sum + (result.profile!.steps[step]?.dbRoundTrips ?? 0), 0);
    say(`PostgreSQL round trips per lifecycle: ${round(trips, 1)}; background: ${JSON.stringify(result.profile.backgroundRoundTrips)}`);
  }
  if (result.costModel) {
    const model = result.costModel;
    say('');
    say(`cost model at ${concurrency} clients (per request):`);
    for (const probe of [model.http, model.authenticated, model.oneQuery]) {
      say(`  GET ${probe.path.padEnd(18)} ${String(probe.requestsPerS).padStart(8)} req/s  ${String(probe.roundTripsPerRequest).padStart(4)} round trips  server ${probe.serverCpuMsPerRequest} ms  postgres ${probe.postgresCpuMsPerRequest} ms CPU  p50 ${probe.p50Ms} ms  p99 ${probe.p99Ms} ms`);
    }
    say(`  one simple round trip through knex+pg: server ${model.serverCpuMsPerSimpleQuery ?? 'n/a'} ms, postgres ${model.postgresCpuMsPerSimpleQuery ?? 'n/a'} ms CPU`);
  }
  if (result.serverCpuProfile) {
    const profile = result.serverCpuProfile;
    say('');
    say(`server main thread (V8 profile, ${profile.lifecycles} lifecycles at ${profile.concurrency} clients): busy ${(profile.busyShare * 100).toFixed(0)}% of the time, ${profile.sampledMs} ms sampled, self time by purpose:`);
    for (const entry of profile.byPurpose) say(`  ${entry.purpose.padEnd(50)}${String(entry.ms).padStart(7)} ms ${(entry.share * 100).toFixed(1).padStart(6)}%`);
  }
  const before = meta.activityBefore;
  const after = meta.activityAfter;
  say('');
  say(`other active backends before/after: ${before.otherActiveBackends}/${after.otherActiveBackends}; load average before/after: ${before.loadAverage1m}/${after.loadAverage1m}`);
  say(`results written to ${outPath}`);
}
