import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * What a benchmark measured, as data for the report (bench/report.ts writes docs/benchmarks.md
 * from these files): each metric with its value, the baseline measured in the same run, and the
 * aim where there is one. Every benchmark saves one file under .bench-out/results/.
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
  metrics: Metric[];
}

export const resultsDirectory = '.bench-out/results';

export function saveResult(result: Omit<BenchResult, 'date'>): void {
  mkdirSync(resultsDirectory, { recursive: true });
  writeFileSync(path.join(resultsDirectory, `${result.benchmark}.json`), JSON.stringify({ ...result, date: new Date().toISOString() }, null, 2));
}

/** The command that ran this script, as a user would type it. */
export const commandLine = (script: string) => `npm run ${script}${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`;
