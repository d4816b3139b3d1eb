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
 * need. The aim is judged on the first, without the young generation and counted from the
 * compacted process the subscribers start from (bench/fanout/measure.ts `heldRss`); counted from
 * before that compaction it moved from run to run with when the scavenges fell (8 to 24 KiB per
 * subscriber for the same code: docs/benchmark-history.md, "Fan-out per subscriber", and -2.6 KiB
 * at 1,000: "sixteenth session"); the second much less. The heap counts heapUsed and external
 * (which already includes the ArrayBuffers).
 */
import v8 from 'node:v8';

type Collect = (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void;

/**
 * The young generation's resident size (its semi-spaces and young large objects): empty after any
 * full collection, but resident, and sized by V8 from how fast the process allocates (about 4 MiB
 * resident for the bare server, up to 32 MiB for a busy one), not from what it keeps. It is
 * reported so that the bench can leave it out of the RSS per subscriber (measure.ts).
 */
const youngBytes = () =>
  v8
    .getHeapSpaceStatistics()
    .filter((space) => space.space_name === 'new_space' || space.space_name === 'new_large_object_space')
    .reduce((total, space) => total + space.physical_space_size, 0);

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: Collect }).gc;
  gc?.({ type: 'major', execution: 'sync' });
  const full = process.memoryUsage();
  const young = youngBytes();
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const compacted = process.memoryUsage();
  const compactedYoung = youngBytes();
  process.stdout.write(
    `memory-probe pid=${process.pid} heap=${full.heapUsed + full.external} rss=${full.rss} young=${young} compacted_rss=${compacted.rss} compacted_young=${compactedYoung}\n`,
  );
});
