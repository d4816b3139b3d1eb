import { startClientProcesses } from './client-pool.ts';
import { type Memory, type ServerProcess, log, sleep, waitUntil } from './processes.ts';
import { type ClientTarget, percentileOf } from './sse-clients.ts';

/**
 * One measurement, the same for the bare server and the product: memory before the subscribers,
 * N subscribers connected (over K client processes), memory again (live heap and RSS after a full
 * collection, and RSS after a compacting one), then W warm-up changes whose latencies are not
 * kept, then M changes `intervalMs` apart, each reaching one group of subscribers, and the
 * change-to-client latency of every event of those M.
 */
export interface Row {
  name: string;
  subscribers: number;
  client_processes: number;
  warmup_changes: number;
  interval_ms: number;
  delivered: number;
  expected: number;
  heap_bytes_per_subscriber: number;
  rss_bytes_per_subscriber: number;
  /** After a compacting collection: a floor (memory-probe.ts). */
  compacted_rss_bytes_per_subscriber: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
}

export interface Plan {
  /**
   * Changes made first and not measured, the same for every server: the product's first changes
   * after it starts pay PostgreSQL's planning of their statements and V8's compiling, which the
   * bare server has nothing of (docs/benchmark-history.md, "Fan-out p99: the first change").
   */
  warmupChanges: number;
  changes: number;
  intervalMs: number;
  clientProcesses: number;
  /** Subscribers each change reaches. */
  perChange: number;
}

export async function measure(
  name: string,
  server: ServerProcess,
  targets: ClientTarget[],
  plan: Plan,
  change: (index: number) => Promise<void>,
): Promise<Row> {
  const subscribers = targets.length;
  await sleep(500);
  const before = await server.memory();
  const clients = startClientProcesses(plan.clientProcesses);
  clients.open(targets);
  await waitUntil(
    () => clients.connected() === subscribers,
    `${name}: subscribers connected`,
    600_000,
    () => `${clients.connected()}/${subscribers}`,
  );
  await sleep(1000);
  const after = await server.memory();
  const per = (field: keyof Memory) => Math.round((after[field] - before[field]) / subscribers);
  log(
    `${name}: ${subscribers} connected (${clients.reconnects()} reconnects), ${(per('heapBytes') / 1024).toFixed(1)} KiB live heap each; ${plan.changes} changes`,
  );
  for (let index = 0; index < plan.warmupChanges; index++) {
    await change(index);
    await sleep(plan.intervalMs);
  }
  const warmedUp = plan.warmupChanges * plan.perChange;
  await waitUntil(
    () => clients.received() >= warmedUp,
    `${name}: warm-up events delivered`,
    300_000,
    () => `${clients.received()}/${warmedUp}`,
  );
  await clients.reset();
  for (let index = 0; index < plan.changes; index++) {
    await change(plan.warmupChanges + index);
    await sleep(plan.intervalMs);
    if (index % 50 === 49) log(`  changes: ${index + 1}/${plan.changes}, events received ${clients.received() - warmedUp}`);
  }
  const expected = plan.changes * plan.perChange;
  await waitUntil(
    () => clients.received() - warmedUp >= expected,
    `${name}: events delivered`,
    300_000,
    () => `${clients.received() - warmedUp}/${expected}`,
  );
  const delivered = clients.received() - warmedUp;
  const histogram = await clients.finish();
  return {
    name,
    subscribers,
    client_processes: plan.clientProcesses,
    warmup_changes: plan.warmupChanges,
    interval_ms: plan.intervalMs,
    delivered,
    expected,
    heap_bytes_per_subscriber: per('heapBytes'),
    rss_bytes_per_subscriber: per('rssBytes'),
    compacted_rss_bytes_per_subscriber: per('compactedRssBytes'),
    p50_ms: percentileOf(histogram, 0.5),
    p99_ms: percentileOf(histogram, 0.99),
    p999_ms: percentileOf(histogram, 0.999),
  };
}
