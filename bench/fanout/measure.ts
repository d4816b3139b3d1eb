import { type ClientProcesses, startClientProcesses } from './client-pool.ts';
import { type Memory, type ServerProcess, log, sleep, waitUntil } from './processes.ts';
import { type ClientTarget, percentileOf } from './sse-clients.ts';

/**
 * One measurement, the same for the bare server and the product: memory before the subscribers,
 * N subscribers connected (over K client processes) in two halves with a reading between, memory
 * again (live heap and RSS after a full collection, and RSS after a compacting one), then W
 * warm-up changes whose latencies are not
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
  /** What the second half of the subscribers added (connectInHalves). */
  heap_bytes_per_subscriber: number;
  /** After a full collection, the young generation left out: what the second half of the subscribers added (connectInHalves). */
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
 * from how fast the process allocates, up to a fixed cap, and the full collection has just emptied
 * it, so it is the same whether 0 or 10,000 subscribers are open (the product's was 30 MiB right
 * after its setup, before any subscriber; the bare server's 4 MiB). Counted, it swung the product's
 * RSS per subscriber at 1,000 by up to 24 KiB either way (docs/benchmark-history.md, "sixteenth
 * session"). The half-empty old-space pages that the product's per-stream work leaves stay in.
 */
const heldRss = (memory: Memory) => memory.rssBytes - memory.youngBytes;

/**
 * The subscribers connect in two halves; the RSS per subscriber is what the second half added
 * (heldRss at the end less heldRss at half-way, a reading that compacts nothing). Measured from
 * before the first subscriber, it also counted the free old-space pages any working process of
 * the product carries (about 10 MiB, with or without subscribers), or, counted from before the
 * probe's compaction, took them off: at 1,000 subscribers that read from -2.6 to +15 KiB each
 * for the same code. Half-way, that slack is already there, and what grows is the subscribers'.
 * The live heap is counted the same way: from before the first subscriber it read -12.8 KiB per
 * subscriber for WORKERS=2 at 300, the workers having let go of more that they held before the
 * subscribers than the subscribers took; over the second half, both readings come after the
 * streams' first opening.
 */
async function connectInHalves(name: string, server: ServerProcess, clients: ClientProcesses, targets: ClientTarget[]) {
  const half = Math.floor(targets.length / 2);
  const connect = async (from: number, upTo: number) => {
    clients.open(targets.slice(from, upTo));
    await waitUntil(
      () => clients.connected() === upTo,
      `${name}: subscribers connected`,
      600_000,
      () => `${clients.connected()}/${upTo}`,
    );
    await sleep(1000);
  };
  await connect(0, half);
  const halfway = await server.memory(false);
  await connect(half, targets.length);
  const after = await server.memory();
  const secondHalf = (bytes: (memory: Memory) => number) => Math.round((bytes(after) - bytes(halfway)) / (targets.length - half));
  return { halfway, after, rssPerSubscriber: secondHalf(heldRss), heapPerSubscriber: secondHalf((memory) => memory.heapBytes) };
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
  const { halfway, after, rssPerSubscriber, heapPerSubscriber } = await connectInHalves(name, server, clients, targets);
  const per = (field: keyof Memory) => Math.round((after[field] - before[field]) / subscribers);
  const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;
  log(
    `${name}: ${subscribers} connected (${clients.reconnects()} reconnects), ${(heapPerSubscriber / 1024).toFixed(1)} KiB live heap each (${(per('heapBytes') / 1024).toFixed(1)} counted from before the first); RSS before ${mib(before.rssBytes)} (compacted ${mib(before.compactedRssBytes)}), half-way ${mib(halfway.rssBytes)} (young generation ${mib(halfway.youngBytes)}), after ${mib(after.rssBytes)} (young ${mib(after.youngBytes)}; compacted ${mib(after.compactedRssBytes)}); ${plan.changes} changes`,
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
    heap_bytes_per_subscriber: heapPerSubscriber,
    rss_bytes_per_subscriber: rssPerSubscriber,
    compacted_rss_bytes_per_subscriber: per('compactedRssBytes'),
    p50_ms: percentileOf(histogram, 0.5),
    p99_ms: percentileOf(histogram, 0.99),
    p999_ms: percentileOf(histogram, 0.999),
  };
}
