import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { prepareRawTables } from '../lifecycle/pgbench.ts';
import { type Metric, commandLine, saveResult } from '../results.ts';
import { type Plan, type Row, measure } from './measure.ts';
import { buyerCount, measureProduct, recreateDatabase } from './product.ts';
import { log, startProcess } from './processes.ts';

/**
 * bench/fanout: N SSE subscribers on one instance (PostgreSQL + Redis), state changes driven
 * through the API, memory per subscriber and change-to-client latency, next to a bare node:http
 * SSE server measured the same way in the same run, at each subscriber count asked for (1,000 and
 * 10,000 by default). The clients run in their own processes (one per 5,000 subscribers unless
 * --client-processes says otherwise), the same for every server measured.
 */
const { values } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000,10000' },
    large: { type: 'boolean', default: false },
    changes: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '20' },
    'interval-ms': { type: 'string', default: '10' },
    'client-processes': { type: 'string' },
    /** better-sse beside the bare server: at the first subscriber count (first), every one (all), or none. */
    library: { type: 'string', default: 'first' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/marketplace_bench_fanout' },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' },
    workers: { type: 'string', default: '1' },
  },
});
const sizes = values.large ? [10_000] : values.subscribers.split(',').map(Number);
const workers = Number(values.workers);

/** A bare SSE server (bare-server.ts, or the same with better-sse) measured as the product is. */
async function measureBaseline(
  subscribers: number,
  plan: Plan,
  script = 'bench/fanout/bare-server.ts',
  name = 'bare node:http SSE',
  environment: Record<string, string> = {},
) {
  const server = await startProcess([script], environment, /listening (http:\/\/\S+)/g);
  try {
    const targets = Array.from({ length: subscribers }, (_, index) => ({ url: `${server.url}/stream?group=${index % buyerCount}`, headers: {} }));
    // The same shape as the product: each change reaches one group (one buyer's subscribers).
    return await measure(name, server, targets, plan, async (index) => {
      await fetch(`${server.url}/emit?group=${index % buyerCount}`, { method: 'POST' });
    });
  } finally {
    server.stop();
  }
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const ratio = (value: number, base: number) => (base > 0 ? `${(value / base).toFixed(2)}x` : '');

function printTable(rows: Row[], bare: Row) {
  log('');
  log('| server | subscribers | client processes | events delivered | live heap per subscriber | RSS per subscriber | RSS, compacted | p50 | p99 | p99.9 |');
  log('|---|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const versus = row === bare ? '' : ` (${ratio(row.heap_bytes_per_subscriber, bare.heap_bytes_per_subscriber)})`;
    log(
      `| ${row.name} | ${row.subscribers} | ${row.client_processes} | ${row.delivered}/${row.expected} | ${kib(row.heap_bytes_per_subscriber)}${versus} | ${kib(row.rss_bytes_per_subscriber)}${row === bare ? '' : ` (${ratio(row.rss_bytes_per_subscriber, bare.rss_bytes_per_subscriber)})`} | ${kib(row.compacted_rss_bytes_per_subscriber)} | ${row.p50_ms} ms | ${row.p99_ms} ms${row === bare ? '' : ` (${ratio(row.p99_ms, bare.p99_ms)})`} | ${row.p999_ms} ms |`,
    );
  }
}

/**
 * The RSS aim, judged only on readings that can be true: a process that keeps H more bytes of live
 * heap per subscriber holds at least about that much more memory, so an RSS per subscriber at or
 * below zero, or below the live heap's, is a reading of something else (the process giving memory
 * back, or its subscribers filling pages it already had) and is not judged, on either side.
 */
function rssAim(row: Row, bare: Row) {
  const invalid = (of: Row) => of.rss_bytes_per_subscriber <= 0 || of.rss_bytes_per_subscriber < of.heap_bytes_per_subscriber;
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  for (const of of [row, bare]) {
    if (invalid(of))
      return {
        aim: {
          text: `at most 1.5x bare: no valid reading (${of.name}: ${kib(of.rss_bytes_per_subscriber)} of RSS against ${kib(of.heap_bytes_per_subscriber)} of live heap), not judged`,
          met: false,
        },
      };
  }
  return { aim: { text: 'at most 1.5x bare', met: row.rss_bytes_per_subscriber <= 1.5 * bare.rss_bytes_per_subscriber } };
}

/** The figures the report shows, with the aims of issue 30 (p99 <= 1.2x, heap <= 2x, RSS <= 1.5x the bare server's). */
function metricsOf(row: Row, bare: Row, label: string, withAims: boolean): Metric[] {
  const baseline = (value: number) => ({ name: 'bare node:http SSE', value });
  // A reading at or below zero is not a measurement: the process gave memory back while the
  // subscribers connected (docs/benchmark-history.md, "Fan-out per subscriber"), and it must not
  // pass an aim by coming out small.
  const aim = (max: number, value: number, base: number) =>
    withAims
      ? {
          aim:
            value > 0
              ? { text: `at most ${max}x bare`, met: value <= max * base }
              : { text: `at most ${max}x bare: no valid reading (${value} KiB), not judged`, met: false },
        }
      : {};
  const kibOf = (bytes: number) => Number((bytes / 1024).toFixed(1));
  const heap = kibOf(row.heap_bytes_per_subscriber);
  const bareHeap = kibOf(bare.heap_bytes_per_subscriber);
  const rss = kibOf(row.rss_bytes_per_subscriber);
  const bareRss = kibOf(bare.rss_bytes_per_subscriber);
  return [
    {
      metric: `${label}, ${row.subscribers} subscribers: live heap per subscriber`,
      value: heap,
      unit: 'KiB',
      baseline: baseline(bareHeap),
      ...aim(2, heap, bareHeap),
    },
    {
      metric: `${label}, ${row.subscribers} subscribers: RSS per subscriber`,
      value: rss,
      unit: 'KiB',
      baseline: baseline(bareRss),
      ...(withAims ? rssAim(row, bare) : {}),
    },
    {
      metric: `${label}, ${row.subscribers} subscribers: RSS per subscriber after a compacting collection (a floor)`,
      value: kibOf(row.compacted_rss_bytes_per_subscriber),
      unit: 'KiB',
      baseline: baseline(kibOf(bare.compacted_rss_bytes_per_subscriber)),
    },
    {
      metric: `${label}, ${row.subscribers} subscribers: change-to-client p99`,
      value: row.p99_ms,
      unit: 'ms',
      baseline: baseline(bare.p99_ms),
      ...aim(1.2, row.p99_ms, bare.p99_ms),
    },
  ];
}

const bareCommittedName = 'bare node:http SSE, each change committed first';
const bareEscrowName = 'bare node:http SSE, each change an escrow step committed first';
const results: { subscribers: number; plan: Plan; baseline: Row; committed: Row; escrow: Row; library: Row | null; product: Row }[] = [];

/**
 * The bare server committing an escrow step before it announces (bare-server.ts, BARE_COMMIT_STEP):
 * on the product's database once the product has gone, whose migrated tables the bench_* copies
 * are made from.
 */
async function measureEscrowBaseline(subscribers: number, plan: Plan) {
  await prepareRawTables(values['database-url']);
  return measureBaseline(subscribers, plan, 'bench/fanout/bare-server.ts', bareEscrowName, {
    BARE_COMMIT_URL: values['database-url'],
    BARE_COMMIT_STEP: 'escrow',
  });
}
const metrics: Metric[] = [];
for (const [index, subscribers] of sizes.entries()) {
  const plan: Plan = {
    warmupChanges: Number(values.warmup),
    changes: Number(values.changes),
    intervalMs: Number(values['interval-ms']),
    clientProcesses: values['client-processes'] ? Number(values['client-processes']) : Math.max(1, Math.ceil(subscribers / 5_000)),
    perChange: subscribers / buyerCount,
  };
  log(
    `\n== ${subscribers} subscribers, ${plan.clientProcesses} client process(es), ${plan.warmupChanges} warm-up and ${plan.changes} measured changes ${plan.intervalMs} ms apart ==`,
  );
  const baseline = await measureBaseline(subscribers, plan);
  // The same bare server committing each change first: what announcing only committed changes costs at the least.
  const bareCommitUrl = values['database-url'].replace(/\/[^/]+$/, '/marketplace_bench_fanout_bare');
  await recreateDatabase(bareCommitUrl);
  const committed = await measureBaseline(subscribers, plan, 'bench/fanout/bare-server.ts', bareCommittedName, { BARE_COMMIT_URL: bareCommitUrl });
  const withLibrary = values.library === 'all' || (values.library === 'first' && index === 0);
  const library = withLibrary ? await measureBaseline(subscribers, plan, 'bench/fanout/better-sse-server.ts', 'better-sse on node:http') : null;
  const product = await measureProduct(subscribers, plan, { databaseUrl: values['database-url'], redisUrl: values['redis-url'], workers });
  const escrow = await measureEscrowBaseline(subscribers, plan);
  printTable([baseline, committed, escrow, ...(library ? [library] : []), product], baseline);
  results.push({ subscribers, plan, baseline, committed, escrow, library, product });
  const label = workers === 1 ? 'product' : `product, WORKERS=${workers}`;
  metrics.push(...metricsOf(product, baseline, label, true));
  // Beside the aim, without one of their own: the bare server committing each change before it announces.
  for (const [what, name, row] of [
    ['each change', bareCommittedName, committed],
    ['an escrow step', bareEscrowName, escrow],
  ] as const) {
    log(`product p99 against the bare server that commits ${what} first: ${ratio(product.p99_ms, row.p99_ms)}`);
    metrics.push({
      metric: `${label}, ${subscribers} subscribers: change-to-client p99 against a bare server that commits ${what} first`,
      value: product.p99_ms,
      unit: 'ms',
      baseline: { name, value: row.p99_ms },
    });
  }
  if (library) metrics.push(...metricsOf(library, baseline, 'better-sse', false));
}
mkdirSync('.bench-out', { recursive: true });
writeFileSync('.bench-out/fanout.json', JSON.stringify({ date: new Date().toISOString(), workers, results }, null, 2));
saveResult({ benchmark: 'fanout', title: 'Fan-out to SSE subscribers: `bench/fanout`', command: commandLine('bench:fanout'), metrics });
process.exit(0);
