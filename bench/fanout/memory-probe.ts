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
 * need. The first is the one the aim is judged on; it moves from run to run with when the
 * scavenges fell (8 to 24 KiB per subscriber for the same code: docs/benchmark-history.md,
 * "Fan-out per subscriber"), the second much less. The heap counts heapUsed and external (which
 * already includes the ArrayBuffers).
 */
type Collect = (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void;

process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: Collect }).gc;
  gc?.({ type: 'major', execution: 'sync' });
  const full = process.memoryUsage();
  gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const compacted = process.memoryUsage();
  process.stdout.write(`memory-probe pid=${process.pid} heap=${full.heapUsed + full.external} rss=${full.rss} compacted_rss=${compacted.rss}\n`);
});
