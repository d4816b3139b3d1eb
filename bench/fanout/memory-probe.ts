/**
 * Loaded into a measured process with `--expose-gc --import`: on SIGUSR2 it collects garbage and
 * prints the live heap, so "memory per subscriber" counts what subscribers keep, not litter.
 */
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  const usage = process.memoryUsage();
  process.stdout.write(`memory-probe heap=${usage.heapUsed + usage.external + usage.arrayBuffers} rss=${usage.rss}\n`);
});
