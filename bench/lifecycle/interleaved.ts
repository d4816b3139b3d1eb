import path from 'node:path';
import type { InterleavedMeasurement } from './measurements.ts';
import type { PhaseContext, RawClients } from './phases.ts';
import { dropRawTables, prepareRawTables, runPgbench } from './pgbench.ts';
import { stateChangesPerLifecycle } from './report.ts';
import { round } from './stats.ts';

/**
 * The ratio read in short interleaved rounds: pgbench, the product, pgbench, the product, ...,
 * pgbench, each slice a few seconds, and each round's ratio the product's rate over the mean of
 * the pgbench slices on either side of it; the median of the rounds is the reading.
 *
 * Why: the whole-run ratio divides a run of tens of seconds by the mean of two pgbench runs before
 * and after it, and on these shared VMs pgbench's own rate moved by half between those two (1,171
 * before and 761 after in one run, docs/benchmark-history.md "eighteenth session"), and the same
 * code read 0.63x to 1.00x minutes apart. A drift slower than a round falls on both sides of each
 * round alike, as the batcher's own trials alternate their choices (wait-trials.ts). The slices are
 * back to back, so neither side runs on a machine the other has just left idle.
 */
export async function interleavedRounds(context: PhaseContext, clients: RawClients): Promise<InterleavedMeasurement | null> {
  const { options, server, driver, pairs, say } = context;
  if (options.rounds === 0) return null;
  const outDirectory = path.dirname(path.resolve(options.out));
  say(
    `interleaved rounds: ${options.rounds} × (${options.roundLifecycles} lifecycles of the product, ${options.roundPgbenchSeconds} s of pgbench -c ${clients.clients}), pgbench first and last`,
  );
  await prepareRawTables(options.databaseUrl);
  const pgbench = async () => (await runPgbench(options.databaseUrl, clients.clients, options.roundPgbenchSeconds, outDirectory)).tps;
  const pgbenchRates = [await pgbench()];
  const productRates: number[] = [];
  let failed = 0;
  for (let index = 0; index < options.rounds; index++) {
    const load = await driver.run({ baseUrl: server.baseUrl, pairs, lifecycles: options.roundLifecycles, concurrency: options.concurrency }, () => {});
    failed += load.failed;
    productRates.push(((load.lifecycles - load.failed) * stateChangesPerLifecycle * 1000) / load.elapsedMs);
    pgbenchRates.push(await pgbench());
    const ratio = productRates[index]! / ((pgbenchRates[index]! + pgbenchRates[index + 1]!) / 2);
    say(
      `  round ${index + 1}/${options.rounds}: product ${productRates[index]!.toFixed(1)} changes/s, pgbench ${pgbenchRates[index]!.toFixed(1)} / ${pgbenchRates[index + 1]!.toFixed(1)}: ${ratio.toFixed(3)}x`,
    );
  }
  await dropRawTables(options.databaseUrl);
  if (failed > 0) say(`interleaved rounds: ${failed} lifecycles failed`);
  return summarize(productRates, pgbenchRates, failed, options.roundLifecycles, options.roundPgbenchSeconds);
}

/** Each round's ratio against the mean of its two neighbouring pgbench slices, and their median. */
export function summarize(
  productRates: number[],
  pgbenchRates: number[],
  failed: number,
  lifecyclesPerRound: number,
  pgbenchSeconds: number,
): InterleavedMeasurement {
  const ratios = productRates.map((rate, index) => rate / ((pgbenchRates[index]! + pgbenchRates[index + 1]!) / 2));
  return {
    lifecyclesPerRound,
    pgbenchSeconds,
    productRates: productRates.map((rate) => round(rate, 1)),
    pgbenchRates: pgbenchRates.map((rate) => round(rate, 1)),
    ratios: ratios.map((ratio) => round(ratio, 3)),
    medianRatio: round(median(ratios), 3),
    failed,
  };
}

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}
