/**
 * Loaded into a measured process with `--expose-gc --import`: on SIGUSR2 it collects garbage and
 * prints the live heap, so "memory per subscriber" counts what subscribers keep, not litter.
 * Cluster workers (--workers) inherit it with the primary's execArgv; each reports its own pid.
 *
 * The collection is V8's last-resort one, which also compacts the old generation and gives its
 * emptied pages back. A plain gc() leaves them: a server that made garbage while its subscribers
 * connected (the product authenticates, rate-limits and reads the database per stream) kept that
 * garbage's pages, half empty, next to the streams' objects, and its RSS per subscriber read
 * anywhere from 8 to 24 KiB over runs of the same code, by when the scavenges fell
 * (docs/benchmark-history.md, "Fan-out per subscriber"). Both readings, and every server, get the
 * same collection.
 */
type Collect = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

process.on('SIGUSR2', () => {
  (globalThis as { gc?: Collect }).gc?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  const usage = process.memoryUsage();
  process.stdout.write(`memory-probe pid=${process.pid} heap=${usage.heapUsed + usage.external + usage.arrayBuffers} rss=${usage.rss}\n`);
});
