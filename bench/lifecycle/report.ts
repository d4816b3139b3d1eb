import { steps } from './load.ts';
import type { RequestSample } from './profiler.ts';
import { type Summary, round, summarize } from './stats.ts';

/** Summaries and the tables of the printed report (print.ts). */
export const stateChangesPerLifecycle = 5; // create + freeze + accept + deliver + confirm

/**
 * Issue 30's aims: state changes/s over HTTP at least 1.0x pgbench's one step per transaction at
 * 8 clients and 1.5x at 64 (no aim at other counts), and a state change's p99 at 8 clients no
 * worse than before group commit (about 20-30 ms: 30 ms is the bound).
 */
export const aims = { ratioMinByConcurrency: { 8: 1.0, 64: 1.5 } as Record<number, number>, stateChangeP99MsMax: 30, atConcurrency: 8 };

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
    ([step, s]) =>
      `${step.padEnd(10)}${pad(s.count, 7)}${pad(fixed(s.p50), 9)}${pad(fixed(s.p90), 9)}${pad(fixed(s.p99), 9)}${pad(fixed(s.max), 9)}${pad(fixed(s.mean), 9)}`,
  );
  return [header, ...lines].join('\n');
}

export function profileTable(profile: Record<string, StepProfile>): string {
  const header = `${'step'.padEnd(10)}${pad('requests', 9)}${pad('db trips', 10)}${pad('redis', 7)}${pad('server ms', 11)}${pad('in db ms', 10)}${pad('redis ms', 10)}`;
  const lines = Object.entries(profile).map(
    ([step, p]) =>
      `${step.padEnd(10)}${pad(p.requests, 9)}${pad(fixed(p.dbRoundTrips, 1), 10)}${pad(fixed(p.redisPublishes, 1), 7)}${pad(fixed(p.meanTotalMs, 2), 11)}${pad(fixed(p.meanDbMs, 2), 10)}${pad(fixed(p.meanRedisMs, 2), 10)}`,
  );
  return [header, ...lines].join('\n');
}

export function summarizeLatencies(latencies: Record<string, number[]>): Record<string, Summary> {
  return Object.fromEntries(Object.entries(latencies).map(([step, samples]) => [step, roundSummary(summarize(samples))]));
}

function roundSummary(summary: Summary): Summary {
  return Object.fromEntries(Object.entries(summary).map(([key, value]) => [key, round(value, 2)])) as unknown as Summary;
}
