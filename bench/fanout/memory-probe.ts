/**
 * Loaded into a measured process with `--expose-gc --import`: on SIGUSR2 it collects garbage and
 * prints the live heap, so "memory per subscriber" counts what subscribers keep, not litter.
 * Cluster workers (--workers) inherit it with the primary's execArgv; each reports its own pid.
 */
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  process.stdout.write(`memory-probe pid=${process.pid} heap=${usage.heapUsed + usage.external + usage.arrayBuffers} rss=${usage.rss}\n`);
});
