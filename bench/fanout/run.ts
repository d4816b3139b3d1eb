import { commandLine, saveResult } from '../results.ts';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import knex from 'knex';
import { limits } from '../../src/limits.ts';
import { openClients, percentile, residentBytes } from './sse-clients.ts';

/**
 * bench/fanout: N SSE subscribers on one instance (PostgreSQL + Redis), state changes driven
 * through the API, memory per subscriber and change-to-client latency, next to a bare node:http
 * SSE server measured the same way in the same run.
 */
const { values } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    large: { type: 'boolean', default: false },
    changes: { type: 'string', default: '200' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/marketplace_bench_fanout' },
    'redis-url': { type: 'string', default: 'redis://127.0.0.1:6379' },
    workers: { type: 'string', default: '1' },
  },
});
/** Server processes of the product (its WORKERS setting); subscribers spread over them. */
const workerCount = Number(values.workers);
const subscriberCount = values.large ? 10_000 : Number(values.subscribers);
const changeCount = Number(values.changes);
const buyerCount = 10;
const adminToken = 'bench-fanout-admin-token-0123456789';
/** The event's own time is its last created_at member: read it without parsing the whole event. */
const timestampOfEvent = (data: string) => Date.parse(data.slice(data.lastIndexOf('"created_at":"') + 14, data.lastIndexOf('"created_at":"') + 38));
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntil(check: () => boolean, what: string, timeoutMs: number, progress?: () => string) {
  const deadline = Date.now() + timeoutMs;
  let lastPrint = 0;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    if (progress && Date.now() - lastPrint > 1000) {
      lastPrint = Date.now();
      log(`  ${what}: ${progress()}`);
    }
    await sleep(50);
  }
}

/**
 * The process and, for a cluster (--workers), its workers: the processes whose memory counts.
 * Only Node children: tsx also starts an esbuild service process, which is not the server.
 */
function processTree(pid: number): number[] {
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const isNode = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === 'node';
        return isNode && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
  return [pid, ...children.map(Number)];
}

function startProcess(command: string[], environment: Record<string, string>, ready: RegExp, readyCount = 1) {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', '--import', './bench/fanout/memory-probe.ts', ...command], {
    env: { ...process.env, ...environment },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  /** Live heap after a full collection, summed over the process tree, as each probe reports it. */
  const liveHeap = async () => {
    const seen = output.length;
    const pids = processTree(child.pid!);
    for (const pid of pids) process.kill(pid, 'SIGUSR2');
    for (let attempt = 0; attempt < 100; attempt++) {
      await sleep(50);
      const reports = [...output.slice(seen).matchAll(/memory-probe pid=(\d+) heap=(\d+)/g)];
      if (reports.length >= pids.length) return reports.reduce((sum, report) => sum + Number(report[2]), 0);
    }
    return Number.NaN;
  };
  return new Promise<{ pid: number; url: string; stop(): void; liveHeap(): Promise<number> }>((resolve, reject) => {
    const timer = setInterval(() => {
      const matches = [...output.matchAll(ready)];
      if (matches.length >= readyCount) {
        clearInterval(timer);
        resolve({ pid: child.pid!, url: matches[0]![1]!, stop: () => processTree(child.pid!).forEach((pid) => process.kill(pid, 'SIGKILL')), liveHeap });
      }
      if (child.exitCode !== null) reject(new Error(output));
    }, 50);
  });
}

async function recreateDatabase(url: string) {
  const name = new URL(url).pathname.slice(1);
  const admin = knex({ client: 'pg', connection: url.replace(/\/[^/]+$/, '/postgres') });
  await admin.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.raw(`CREATE DATABASE "${name}"`);
  await admin.destroy();
}

async function api(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await response.json()) as { code: number; data: Record<string, string> };
  if (json.code !== 0) throw new Error(`${method} ${path}: ${JSON.stringify(json)}`);
  return json.data;
}

async function agent(base: string) {
  const admin = { 'X-Admin-Token': adminToken };
  const key = await api(base, 'POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'bench' });
  const user = await api(base, 'POST', '/api/v1/auth/signup', {}, { email: `${randomUUID()}@bench.example`, password: 'bench-password-1' });
  await api(base, 'POST', `/api/v1/admin/api-keys/${key.id}/links`, admin, { user_id: user.user_id });
  return { userId: user.user_id!, headers: { 'X-Api-Key': key.api_key!, 'X-Platform-User-Id': user.user_id! } };
}

/**
 * One credential may hold only limits.sseStreamsPerCredentialMax streams open, so each buyer's
 * subscribers are spread over enough API keys linked to that buyer: every one of them still sees
 * the buyer's events, as the subscribers of one group did before the cap.
 */
async function subscriberCredentials(base: string, buyer: { userId: string; headers: Record<string, string> }, subscribers: number) {
  const admin = { 'X-Admin-Token': adminToken };
  const credentials = [buyer.headers];
  while (credentials.length * limits.sseStreamsPerCredentialMax < subscribers) {
    const key = await api(base, 'POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'bench' });
    await api(base, 'POST', `/api/v1/admin/api-keys/${key.id}/links`, admin, { user_id: buyer.userId });
    credentials.push({ 'X-Api-Key': key.api_key!, 'X-Platform-User-Id': buyer.userId });
  }
  return credentials;
}

interface Memory {
  rssBytes: number;
  heapBytes: number;
}

async function memoryOf(server: { pid: number; liveHeap(): Promise<number> }): Promise<Memory> {
  const heapBytes = await server.liveHeap();
  const rssBytes = processTree(server.pid).reduce((sum, pid) => sum + residentBytes(pid), 0);
  return { rssBytes, heapBytes };
}

const perSubscriber = (before: Memory, after: Memory) => ({
  rss: (after.rssBytes - before.rssBytes) / subscriberCount,
  heap: (after.heapBytes - before.heapBytes) / subscriberCount,
});

function summarize(name: string, latencies: number[], memory: { rss: number; heap: number }, delivered: number, expected: number) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    name,
    subscribers: subscriberCount,
    delivered,
    expected,
    rss_bytes_per_subscriber: Math.round(memory.rss),
    heap_bytes_per_subscriber: Math.round(memory.heap),
    p50_ms: percentile(sorted, 0.5),
    p99_ms: percentile(sorted, 0.99),
    p999_ms: percentile(sorted, 0.999),
  };
}

async function measureProduct() {
  await recreateDatabase(values['database-url']!);
  const server = await startProcess(
    ['src/main.ts'],
    {
      DATABASE_URL: values['database-url']!,
      REDIS_URL: values['redis-url']!,
      ADMIN_TOKEN: adminToken,
      JWT_SECRET: 'bench-fanout-jwt-secret-0123456789',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      WORKERS: String(workerCount),
      // The setup (a few signups, hundreds of admin calls) all comes from 127.0.0.1 and is not what
      // is measured; the caps on open streams per credential stay as in production.
      RATE_LIMIT_SIGNUP_PER_ADDRESS: 'off',
      RATE_LIMIT_REQUESTS_PER_ADDRESS: 'off',
    },
    /"message":"listening",(?:"worker":\d+,)?"url":"(http:\/\/[^"]+)"/g,
    workerCount,
  );
  try {
    log(
      `product: server pid ${server.pid} (${workerCount === 1 ? 'one process' : `${workerCount} workers`}) at ${server.url}; creating ${buyerCount} buyers and a seller`,
    );
    const seller = await agent(server.url);
    const buyers: Awaited<ReturnType<typeof agent>>[] = [];
    for (let index = 0; index < buyerCount; index++) buyers.push(await agent(server.url));
    for (const buyer of buyers)
      await api(
        server.url,
        'POST',
        '/api/v1/admin/wallet/credit',
        { 'X-Admin-Token': adminToken },
        { user_id: buyer.userId, currency: 'UT', amount: '100000.00' },
      );
    const capability = await api(server.url, 'POST', '/api/v1/capabilities', seller.headers, {
      title: 'Bench',
      description: 'Bench',
      category: 'data',
      capability_type: 'tool',
      pricing_model: 'per_use',
      price_ut: '1.00',
      callback_url: 'https://seller.example/callback',
    });
    const perBuyer = Math.ceil(subscriberCount / buyerCount);
    const credentials: Record<string, string>[][] = [];
    for (const buyer of buyers) credentials.push(await subscriberCredentials(server.url, buyer, perBuyer));
    log(`product: ${credentials[0]!.length} credentials per buyer (at most ${limits.sseStreamsPerCredentialMax} streams each)`);
    await sleep(500);
    const before = await memoryOf(server);
    // Subscriber i listens to buyer i % buyerCount, through that buyer's credential number
    // floor(i / buyerCount / streams per credential).
    const headersOf = (index: number) => credentials[index % buyerCount]![Math.floor(Math.floor(index / buyerCount) / limits.sseStreamsPerCredentialMax)]!;
    const clients = openClients(subscriberCount, (index) => ({ url: `${server.url}/api/v1/transactions/events`, headers: headersOf(index) }), timestampOfEvent);
    await waitUntil(
      () => clients.connected() === subscriberCount,
      'subscribers connected',
      300_000,
      () => `${clients.connected()}/${subscriberCount}`,
    );
    await sleep(1000);
    const memory = perSubscriber(before, await memoryOf(server));
    log(`product: connected with ${clients.reconnects()} reconnects`);
    log(
      `product: ${subscriberCount} subscribers: ${(memory.heap / 1024).toFixed(1)} KiB live heap, ${(memory.rss / 1024).toFixed(1)} KiB RSS each; driving ${changeCount} changes`,
    );
    for (let index = 0; index < changeCount; index++) {
      const buyer = buyers[index % buyerCount]!;
      await api(server.url, 'POST', '/api/v1/transactions', { ...buyer.headers, 'Idempotency-Key': randomUUID() }, { capability_id: capability.id });
      await sleep(10);
      if (index % 50 === 49) log(`  changes: ${index + 1}/${changeCount}, events received ${clients.received()}`);
    }
    const expected = changeCount * (subscriberCount / buyerCount);
    await waitUntil(
      () => clients.received() >= expected,
      'events delivered',
      120_000,
      () => `${clients.received()}/${expected}`,
    );
    clients.close();
    return summarize('product (SSE via Redis)', clients.latenciesMs, memory, clients.received(), expected);
  } finally {
    server.stop();
  }
}

/** A bare SSE server (bare-server.ts, or the same with better-sse) measured as the product is. */
async function measureBaseline(script = 'bench/fanout/bare-server.ts', name = 'bare node:http SSE') {
  const server = await startProcess([script], {}, /listening (http:\/\/\S+)/g);
  try {
    await sleep(300);
    const before = await memoryOf(server);
    const clients = openClients(subscriberCount, (index) => ({ url: `${server.url}/stream?group=${index % buyerCount}`, headers: {} }), timestampOfEvent);
    await waitUntil(
      () => clients.connected() === subscriberCount,
      'baseline subscribers connected',
      300_000,
      () => `${clients.connected()}/${subscriberCount}`,
    );
    await sleep(1000);
    const memory = perSubscriber(before, await memoryOf(server));
    // The same shape as the product: each change reaches one group (one buyer's subscribers).
    for (let index = 0; index < changeCount; index++) {
      await fetch(`${server.url}/emit?group=${index % buyerCount}`, { method: 'POST' });
      await sleep(10);
    }
    const expected = changeCount * (subscriberCount / buyerCount);
    await waitUntil(
      () => clients.received() >= expected,
      'baseline events delivered',
      120_000,
      () => `${clients.received()}/${expected}`,
    );
    clients.close();
    return summarize(name, clients.latenciesMs, memory, clients.received(), expected);
  } finally {
    server.stop();
  }
}

const baseline = await measureBaseline();
const library = await measureBaseline('bench/fanout/better-sse-server.ts', 'better-sse on node:http');
const product = await measureProduct();
const productName = workerCount === 1 ? product.name : `${product.name}, WORKERS=${workerCount}`;
log('');
log('| server | subscribers | events delivered | live heap per subscriber | RSS per subscriber | p50 | p99 | p99.9 |');
log('|---|---|---|---|---|---|---|---|');
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
for (const row of [baseline, library, { ...product, name: productName }]) {
  log(
    `| ${row.name} | ${row.subscribers} | ${row.delivered}/${row.expected} | ${kib(row.heap_bytes_per_subscriber)} | ${kib(row.rss_bytes_per_subscriber)} | ${row.p50_ms} ms | ${row.p99_ms} ms | ${row.p999_ms} ms |`,
  );
}
mkdirSync('.bench-out', { recursive: true });
writeFileSync('.bench-out/fanout.json', JSON.stringify({ date: new Date().toISOString(), workers: workerCount, baseline, library, product }, null, 2));
const memoryAndLatency = (row: typeof product, name: string) => [
  {
    metric: `${name}: RSS per subscriber`,
    value: Number((row.rss_bytes_per_subscriber / 1024).toFixed(1)),
    unit: 'KiB',
    baseline: { name: 'bare node:http SSE', value: Number((baseline.rss_bytes_per_subscriber / 1024).toFixed(1)) },
  },
  { metric: `${name}: change-to-client p99`, value: row.p99_ms, unit: 'ms', baseline: { name: 'bare node:http SSE', value: baseline.p99_ms } },
];
saveResult({
  benchmark: 'fanout',
  title: 'Fan-out to SSE subscribers: `bench/fanout`',
  command: commandLine('bench:fanout'),
  metrics: [
    ...memoryAndLatency(product, `product, ${subscriberCount} subscribers`),
    ...memoryAndLatency(library, `better-sse, ${subscriberCount} subscribers`),
  ],
});
process.exit(0);
