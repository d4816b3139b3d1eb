import type { CpuByProcess } from './cpu.ts';
import type { DatabaseCounters } from './database.ts';
import type { LoadResult } from './load.ts';
import type { PgbenchResult } from './pgbench.ts';
import type { BatchStats } from './server.ts';

/**
 * What the phases measure (phases.ts) and the result assembles (result.ts): kept apart from both
 * so that the result, which the report prints, does not import the phases, which use the report.
 */
export interface RunMeasurement {
  load: LoadResult;
  serverCpu: NodeJS.CpuUsage;
  external: CpuByProcess;
  machineCores: number;
  foreignBefore: number;
  counters: DatabaseCounters;
  eventLoopDelayMs: { p50: number; p99: number; max: number } | null;
  /** The group commit during the run: state changes, the statements they shared, and statements by size. */
  batches: {
    changes: number;
    statements: number;
    largest: number;
    splits: number;
    /** Times the waiting changes waited for the callers just answered, and times that wait ran out. */
    rejoins: number;
    rejoinsTimedOut: number;
    /** Times the batcher did not wait (its trials said it would not pay, or tried not waiting), and its trials at the end. */
    rejoinsSkipped: number;
    trials: BatchStats['trials'];
    sizes: Record<string, number>;
  } | null;
}

export interface RawMeasurement {
  /** The -M extended run before the product's warm-up; the ratio's baseline is its mean with raw's. */
  before: PgbenchResult;
  /** The -M extended run after the product's passes; the CPU, WAL and machine figures below are its. */
  raw: PgbenchResult;
  prepared: PgbenchResult;
  singleStatement: PgbenchResult;
  postgresCpuMs: number;
  pgbenchCpuMs: number;
  elapsedMs: number;
  machineCores: number;
  foreignBefore: number;
  walBytes: number;
  /** pgbench's clients: the run's own count, unless the database's max_connections leaves fewer. */
  clients: number;
  /** Why clients is fewer than the run's count; null when it is the same. */
  clientsWhy: string | null;
}

/** The interleaved rounds (interleaved.ts): rates per slice, pgbench's one more than the product's. */
export interface InterleavedMeasurement {
  lifecyclesPerRound: number;
  pgbenchSeconds: number;
  productRates: number[];
  pgbenchRates: number[];
  /** Each round's product rate over the mean of the pgbench slices before and after it. */
  ratios: number[];
  medianRatio: number;
  failed: number;
}
