import { startClientProcesses } from './client-pool.ts';
import { type Memory, type ServerProcess, log, sleep, waitUntil } from './processes.ts';
import { type ClientTarget, percentileOf } from './sse-clients.ts';

/**
 * One measurement, the same for the bare server and the product: N subscribers opened and closed
 * once, memory before the subscribers, N subscribers connected (over K client processes), memory
 * again (live heap and RSS after a full collection, and RSS after a compacting one), then W
 * warm-up changes whose latencies are not kept, then M changes `intervalMs` apart, each reaching
 * one group of subscribers, and the change-to-client latency of every event of those M.
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
  /** After a full collection, the young generation left out, from the compacted start (heldRss). */
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

/**
 * What the process holds after a full collection, its young generation left out: V8 sizes that
 * from how fast the process allocates, up to a fixed cap (16 MiB semi-spaces by default), and the
 * full collection has just emptied it. The product's held about 30 MiB resident right after its
 * setup, before any subscriber, the bare server's about 4; counted, it swung the product's RSS
 * per subscriber at 1,000 by up to 31 KiB (docs/benchmark-history.md, "sixteenth session"). Its
 * size at each reading is in the log line, so what is left out is seen.
 */
const heldRss = (memory: Memory) => memory.rssBytes - memory.youngBytes;
const heldCompactedRss = (memory: Memory) => memory.compactedRssBytes - memory.compactedYoungBytes;

/**
 * Opens the N subscribers once and closes them, the same for every server measured, before the
 * reading the subscribers are counted from: each server has then opened N streams once (its code
 * compiled, its allocator grown for N sockets), and the product's setup (hundreds of admin calls)
 * is not the only work behind its figure. The reading after it ends with the probe's compacting
 * collection, so the measured subscribers start from a compacted process: counted from the RSS
 * before that collection, the product read negative at 1,000 (the setup's free pages, given back
 * by the probe itself, came off the subscribers' figure).
 */
async function openAndCloseOnce(name: string, plan: Plan, targets: ClientTarget[]) {
  const clients = startClientProcesses(plan.clientProcesses);
  clients.open(targets);
  await waitUntil(
    () => clients.connected() === targets.length,
    `${name}: first subscribers connected`,
    600_000,
    () => `${clients.connected()}/${targets.length}`,
  );
  await clients.finish();
  // The server hears the closes and lets the streams go (a credential's count of open streams too).
  await sleep(3000);
}

export async function measure(
  name: string,
  server: ServerProcess,
  targets: ClientTarget[],
  plan: Plan,
  change: (index: number) => Promise<void>,
): Promise<Row> {
  const subscribers = targets.length;
  await openAndCloseOnce(name, plan, targets);
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
  // From the compacted process the subscribers started from: what they hold, their per-stream
  // work's half-empty pages included, the young generation left out at both ends.
  const rssPerSubscriber = Math.round((heldRss(after) - heldCompactedRss(before)) / subscribers);
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  log(
    `${name}: ${subscribers} connected (${clients.reconnects()} reconnects), ${(per('heapBytes') / 1024).toFixed(1)} KiB live heap each; RSS before ${mib(before.rssBytes)} (compacted ${mib(before.compactedRssBytes)}, young generation ${mib(before.compactedYoungBytes)}), after ${mib(after.rssBytes)} (young generation ${mib(after.youngBytes)}; compacted ${mib(after.compactedRssBytes)}); ${plan.changes} changes`,
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
    rss_bytes_per_subscriber: rssPerSubscriber,
    compacted_rss_bytes_per_subscriber: per('compactedRssBytes'),
    p50_ms: percentileOf(histogram, 0.5),
    p99_ms: percentileOf(histogram, 0.99),
    p999_ms: percentileOf(histogram, 0.999),
  };
}
