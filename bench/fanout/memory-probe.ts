/**
 * Loaded into a measured process with `--expose-gc --import`: on SIGUSR2 it collects garbage and
 * prints the live heap, so "memory per subscriber" counts what subscribers keep, not litter.
 * Cluster workers (--workers) inherit it with the primary's execArgv; each reports its own pid.
 *
 * It reports two readings. First after a full collection (`gc()`): the live heap and the RSS a
 * server keeps, with the half-empty pages that the garbage of its own work left (the product
 * authenticates, rate-limits and reads the database per stream; the bare server does none of
 * that), which is the memory it really holds. Then after V8's last-resort collection, which also
 * compacts the old generation and gives those pages back: a floor, what the subscribers alone
 * need. The aim is judged on the larger of the two (bench/fanout/run.ts `metricsOf`): the first
 * without the young generation and counted over the second half of the subscribers
 * (measure.ts `connectInHalves`), since counted from before them it moved from run to run with
 * when the scavenges fell (8 to 24 KiB per subscriber for the same code: docs/benchmark-history.md,
 * "Fan-out per subscriber", and -2.6 to +15 KiB at 1,000: "sixteenth session"); the second much
 * less. The heap counts heapUsed and external (which already includes the ArrayBuffers).
 */
import v8 from 'node:v8';

type Collect = (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void;

/**
 * The young generation's resident size (its semi-spaces and young large objects): empty after any
 * full collection, but resident, and sized by V8 from how fast the process allocates (8 MiB for
 * the bare server, up to 32 MiB for a busy one), not from what it keeps. It is reported so that
 * the bench can leave it out of the RSS per subscriber (measure.ts).
 */
const youngBytes = () =>
  v8
    .getHeapSpaceStatistics()
    .filter((space) => space.space_name === 'new_space' || space.space_name === 'new_large_object_space')
    .reduce((total, space) => total + space.physical_space_size, 0);

/** One reading; with `compact` the last-resort collection follows the full one and is read too. */
function report(compact: boolean) {
  const gc = (globalThis as { gc?: Collect }).gc;
  gc?.({ type: 'major', execution: 'sync' });
  const full = process.memoryUsage();
  const young = youngBytes();
  if (compact) gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const compacted = compact ? process.memoryUsage() : full;
  const compactedYoung = compact ? youngBytes() : young;
  process.stdout.write(
    `memory-probe pid=${process.pid} heap=${full.heapUsed + full.external} rss=${full.rss} young=${young} compacted_rss=${compacted.rss} compacted_young=${compactedYoung}\n`,
  );
}

process.on('SIGUSR2', () => report(true));
// SIGWINCH, whose default is to be ignored: a reading that leaves the heap as it is (measure.ts
// reads the subscribers' half-way point so, without undoing what the first half left).
process.on('SIGWINCH', () => report(false));
