import { commandLine, saveResult } from '../results.ts';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { recreateDatabase } from '../lifecycle/database.ts';
import { createHttpClient } from '../lifecycle/http.ts';
import { benchAdminToken } from '../lifecycle/server.ts';
import pg from 'pg';
import { type Measurement, type Target, databaseCpu, measure, median, percentile } from './measure.ts';

/**
 * The hot read paths against bare servers doing the same SELECT, in the same run (issue 15,
 * point 10; issue 16, point 5; issue 30, points 2 and 4): REST `GET /transactions/{id}`, JSON-RPC
 * `tasks/get` and `GetTask`, and `GET /wallet` of the product (PostgreSQL, Redis, every rate-limit
 * bucket checked), against bare express 5 and bare node:http handlers that run the same SELECT
 * over a pg pool. Each server runs in a process of its own (bench/read/server.ts); the client
 * sends from C keep-alive connections for `--seconds` per target, for each C of `--clients`, the
 * targets taking turns over `--rounds` rounds (each round in another order), so that drift of
 * the machine spreads over all of them. Besides requests/s it reports each server's CPU per
 * request and the CPU PostgreSQL's backends spent per request (both from /proc), which a loaded
 * machine disturbs far less than throughput.
 *
 *   npm run bench:read
 *   tsx bench/read/run.ts [--clients 16,128] [--seconds 3] [--rounds 3] [--only REGEX]
 *   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_read) is dropped and recreated.
 *   READ_BENCH_CPU_PROF=DIR writes a V8 CPU profile of each server into DIR (CPU.<date>.<pid>.*.cpuprofile).
 */
const option = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return position > 0 ? process.argv[position + 1]! : fallback;
};
const clientCounts = option('clients', '16,128').split(',').map(Number);
const seconds = Number(option('seconds', '3'));
const rounds = Number(option('rounds', '3'));
const only = new RegExp(option('only', '.'));
// A partial run (--only) does not replace the saved result of a whole one.
const saving = option('only', '') === '';
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_read';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const profileDirectory = process.env.READ_BENCH_CPU_PROF;
const progress = (message: string) => process.stderr.write(`${message}\n`);

const children: ChildProcess[] = [];
// A failed run must not leave its servers behind.
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));
async function startServer(mode: Target['server']): Promise<{ url: string; pid: number }> {
  const profile = profileDirectory ? ['--cpu-prof', '--cpu-prof-dir', profileDirectory] : [];
  const child = spawn(process.execPath, [...profile, '--import', 'tsx', 'bench/read/server.ts', mode, databaseUrl, redisUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /listening (http:\/\/\S+)/.exec(output);
      if (!match) return;
      if (profileDirectory) progress(`${mode} server: pid ${child.pid}`);
      resolve({ url: match[1]!, pid: child.pid! });
    });
  });
}

progress('recreating the database; starting the product (migrating) and the two bare servers');
await recreateDatabase(databaseUrl);
const servers = {
  app: await startServer('app'),
  ...Object.fromEntries(await Promise.all((['express', 'http'] as const).map(async (mode) => [mode, await startServer(mode)]))),
} as Record<Target['server'], { url: string; pid: number }>;

/** A market with one purchase per client, made through the product's API. */
const clientsMax = Math.max(...clientCounts);
const app = createHttpClient(servers.app.url, 16);
const admin = { 'X-Admin-Token': benchAdminToken };
const key = await app.call<{ api_key: string }>('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true }, 201);
const userOf = () => {
  const id = randomUUID();
  return { id, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': id } };
};
const [seller, buyer] = [userOf(), userOf()];
await app.call('GET', '/api/v1/auth/me', buyer.headers, undefined, 200);
await app.call('POST', '/api/v1/admin/wallet/credit', admin, { user_id: buyer.id, currency: 'UT', amount: `${clientsMax * 2}.00` }, 200);
const capability = await app.call<{ id: string }>(
  'POST',
  '/api/v1/capabilities',
  seller.headers,
  {
    title: 'Summarize a report',
    description: 'A summary of any report',
    category: 'ai_automation',
    capability_type: 'service',
    pricing_model: 'per_hour',
    price_ut: '1.00',
  },
  201,
);
const transactionIds: string[] = [];
for (let index = 0; index < clientsMax; index++) {
  const headers = { ...buyer.headers, 'Idempotency-Key': randomUUID() };
  transactionIds.push((await app.call<{ id: string }>('POST', '/api/v1/transactions', headers, { capability_id: capability.id, booked_hours: 1 }, 201)).id);
}
app.close();
progress(`market ready: ${clientsMax} transactions`);

const rpc = (method: string) => async (client: ReturnType<typeof createHttpClient>, id: string) => {
  const response = await client.request('POST', '/api/v1/rpc', buyer.headers, { jsonrpc: '2.0', id: 1, method, params: { id } });
  return response.status === 200 && response.body.result !== undefined;
};
const get =
  (path: (id: string) => string, headers: Record<string, string> = {}) =>
  async (client: ReturnType<typeof createHttpClient>, id: string) =>
    (await client.request('GET', path(id), headers)).status === 200;
const oneTransaction = 'bare express 5: SELECT a transaction';
const accounts = 'bare express 5: SELECT the accounts';
const targets = (
  [
    { name: 'bare node:http: SELECT a transaction', baseline: oneTransaction, server: 'http', send: get((id) => `/transactions/${id}`) },
    { name: oneTransaction, baseline: oneTransaction, server: 'express', send: get((id) => `/transactions/${id}`) },
    { name: 'REST GET /api/v1/transactions/{id}', baseline: oneTransaction, server: 'app', send: get((id) => `/api/v1/transactions/${id}`, buyer.headers) },
    { name: 'JSON-RPC tasks/get', baseline: oneTransaction, server: 'app', send: rpc('tasks/get') },
    { name: 'JSON-RPC GetTask', baseline: oneTransaction, server: 'app', send: rpc('GetTask') },
    { name: 'bare node:http: SELECT the accounts', baseline: accounts, server: 'http', send: get(() => `/wallet/${buyer.id}`) },
    { name: accounts, baseline: accounts, server: 'express', send: get(() => `/wallet/${buyer.id}`) },
    { name: 'REST GET /api/v1/wallet/', baseline: accounts, server: 'app', send: get(() => '/api/v1/wallet/', buyer.headers) },
  ] satisfies Target[]
).filter((target) => only.test(target.name) || target.name === target.baseline);

// Reads the database's backends' CPU (measure.ts databaseCpu) over a connection of its own.
const databaseClient = new pg.Client({ connectionString: databaseUrl });
await databaseClient.connect();
const databaseCpuUs = databaseCpu(databaseClient);

interface Tally {
  perSecond: number[];
  cpuUs: number[];
  databaseCpuUs: number[];
  latencies: number[];
  failed: number;
}
const results = new Map<string, Tally>();
const tallyOf = (clients: number, name: string) => results.get(`${clients} ${name}`)!;
for (const clients of clientCounts) {
  for (const target of targets) results.set(`${clients} ${target.name}`, { perSecond: [], cpuUs: [], databaseCpuUs: [], latencies: [], failed: 0 });
  const ids = transactionIds.slice(0, clients);
  for (let round = 0; round < rounds; round++) {
    const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
    for (const target of order) {
      const client = createHttpClient(servers[target.server].url, clients);
      const measured: Measurement = await measure(target, client, ids, seconds, servers[target.server].pid, databaseCpuUs);
      client.close();
      const tally = tallyOf(clients, target.name);
      tally.perSecond.push(measured.perSecond);
      tally.cpuUs.push(measured.serverCpuUsPerRequest);
      tally.databaseCpuUs.push(measured.databaseCpuUsPerRequest);
      tally.latencies.push(...measured.latencies);
      tally.failed += measured.failed;
      progress(`${clients} clients, round ${round + 1}/${rounds}: ${target.name}: ${Math.round(measured.perSecond)} requests/s`);
    }
  }
}
// Each server stops by itself (a profiled one writes its profile as it exits); the exit hook kills a stuck one.
await Promise.all(
  children.map(
    (child) =>
      new Promise<void>((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(resolve, 10_000).unref();
      }),
  ),
);

for (const clients of clientCounts) {
  console.log(`\nHot reads: ${clients} keep-alive clients, ${seconds} s per target and round, ${rounds} rounds; PostgreSQL and Redis on this machine`);
  console.log(
    '| target | requests/s (median of rounds) | vs bare express | server CPU per request | vs bare express | PostgreSQL CPU per request | vs bare express | p50 | p99 | failed |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const target of targets) {
    const tally = tallyOf(clients, target.name);
    const base = tallyOf(clients, target.baseline);
    const [rate, cpu, database] = [median(tally.perSecond), median(tally.cpuUs), median(tally.databaseCpuUs)];
    console.log(
      `| ${target.name} | ${Math.round(rate)} | ${(rate / median(base.perSecond)).toFixed(2)}x | ${Math.round(cpu)} µs | ${(cpu / median(base.cpuUs)).toFixed(2)}x | ` +
        `${Math.round(database)} µs | ${(database / median(base.databaseCpuUs)).toFixed(2)}x | ` +
        `${percentile(tally.latencies, 0.5).toFixed(2)} ms | ${percentile(tally.latencies, 0.99).toFixed(2)} ms | ${tally.failed} |`,
    );
  }
}
await databaseClient.end();
if (saving)
  saveResult({
    benchmark: 'read',
    title: 'Hot reads against bare handlers: `bench/read`',
    command: commandLine('bench:read'),
    metrics: clientCounts.flatMap((clients) =>
      targets
        .filter((target) => target.server === 'app')
        .map((target) => ({
          metric: `${target.name}, ${clients} clients, requests/s`,
          value: Math.round(median(tallyOf(clients, target.name).perSecond)),
          unit: 'req/s',
          higherIsBetter: true,
          baseline: { name: target.baseline, value: Math.round(median(tallyOf(clients, target.baseline).perSecond)) },
          aim: {
            text: 'at least 0.85x bare express 5',
            met: median(tallyOf(clients, target.name).perSecond) >= 0.85 * median(tallyOf(clients, target.baseline).perSecond),
          },
        })),
    ),
  });
const failures = [...results.values()].reduce((sum, tally) => sum + tally.failed, 0);
if (failures > 0) process.exitCode = 1;
