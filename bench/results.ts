import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * What a benchmark measured, as data for the report (bench/report.ts writes docs/benchmarks.md
 * from these files): each metric with its value, the baseline measured in the same run, and the
 * aim where there is one. Every benchmark saves one file under bench/results/, which is committed:
 * running one benchmark (`npm run bench -- --only hall`) rewrites the report with the others'
 * last results instead of dropping them.
 */
export interface Metric {
  metric: string;
  value: number;
  unit: string;
  /** What the same work costs without the product, measured in the same run. */
  baseline?: { name: string; value: number };
  /** For the ratio's direction: throughput is better higher, latency and memory lower. */
  higherIsBetter?: boolean;
  aim?: { text: string; met: boolean | null };
}

export interface BenchResult {
  benchmark: string;
  title: string;
  command: string;
  date: string;
  /** Where it was measured (machineDescription()): results of other runs may come from another machine. */
  machine?: string;
  metrics: Metric[];
}

// stdout is null, despite its type, when the command cannot be started (no git, say).
// eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
const shell = (command: string, args: string[]) => spawnSync(command, args, { encoding: 'utf8' }).stdout?.trim() ?? '';

/** This machine, as the report names it: CPUs, memory, kernel, Node, PostgreSQL and Redis versions. */
export function machineDescription(): string {
  return [
    `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'unknown CPU'}`,
    `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
    `${os.type()} ${os.release()}`,
    `Node ${process.version}`,
    `PostgreSQL ${shell('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-tAc', 'show server_version']) || 'unknown'}`,
    `Redis ${/redis_version:(\S+)/.exec(shell('redis-cli', ['-h', '127.0.0.1', 'INFO', 'server']))?.[1] ?? 'unknown'}`,
  ].join(', ');
}

export const resultsDirectory = 'bench/results';

export function saveResult(result: Omit<BenchResult, 'date'>): void {
  mkdirSync(resultsDirectory, { recursive: true });
  writeFileSync(
    path.join(resultsDirectory, `${result.benchmark}.json`),
    JSON.stringify({ ...result, date: new Date().toISOString(), machine: machineDescription() }, null, 2),
  );
}

/** The command that ran this script, as a user would type it. */
export const commandLine = (script: string) => `npm run ${script}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
