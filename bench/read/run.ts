import { commandLine, saveResult } from '../results.ts';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { recreateDatabase } from '../lifecycle/database.ts';
import { createHttpClient } from '../lifecycle/http.ts';
import { benchAdminToken } from '../lifecycle/server.ts';

/**
 * The hot read paths against bare servers doing the same SELECT, in the same run (issue 15,
 * point 10; issue 16, point 5): REST `GET /transactions/{id}`, JSON-RPC `tasks/get` and `GetTask`,
 * and `GET /wallet` of the product (PostgreSQL, Redis, every rate-limit bucket checked), against
 * bare express 5 and bare node:http handlers that run the same SELECT over a pg pool. Each server
 * runs in a process of its own (bench/read/server.ts); the client sends from `--clients` keep-alive
 * connections for `--seconds` per target, the targets taking turns over `--rounds` rounds (each
 * round in another order), so that drift of the machine spreads over all of them.
 *
 *   npm run bench:read
 *   tsx bench/read/run.ts [--clients 16] [--seconds 3] [--rounds 3]
 *   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_read) is dropped and recreated.
 */
const argument = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return Number(position > 0 ? process.argv[position + 1]! : fallback);
};
const clients = argument('clients', '16');
const seconds = argument('seconds', '3');
const rounds = argument('rounds', '3');
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_read';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const progress = (message: string) => process.stderr.write(`${message}\n`);

const children: ChildProcess[] = [];
// A failed run must not leave its servers behind.
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));
async function startServer(mode: 'app' | 'express' | 'http'): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/read/server.ts', mode, databaseUrl, redisUrl], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      const match = /listening (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
  });
}

progress('recreating the database; starting the product (migrating) and the two bare servers');
await recreateDatabase(databaseUrl);
const appUrl = await startServer('app');
const [expressUrl, httpUrl] = await Promise.all([startServer('express'), startServer('http')]);

/** A market with one purchase per client, made through the product's API. */
const app = createHttpClient(appUrl, clients);
const admin = { 'X-Admin-Token': benchAdminToken };
const key = await app.call<{ api_key: string }>('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true }, 201);
const userOf = () => {
  const id = randomUUID();
  return { id, headers: { 'X-Api-Key': key.api_key, 'X-Platform-User-Id': id } };
};
const [seller, buyer] = [userOf(), userOf()];
await app.call('GET', '/api/v1/auth/me', buyer.headers, undefined, 200);
await app.call('POST', '/api/v1/admin/wallet/credit', admin, { user_id: buyer.id, currency: 'UT', amount: '1000.00' }, 200);
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
for (let index = 0; index < clients; index++) {
  const bought = await app.call<{ id: string }>(
    'POST',
    '/api/v1/transactions',
    { ...buyer.headers, 'Idempotency-Key': randomUUID() },
    { capability_id: capability.id, booked_hours: 1 },
    201,
  );
  transactionIds.push(bought.id);
}
progress(`market ready: ${clients} transactions`);

interface Target {
  name: string;
  url: string;
  send(client: ReturnType<typeof createHttpClient>, transactionId: string): Promise<boolean>;
}
const rpc = (method: string) => async (client: ReturnType<typeof createHttpClient>, id: string) => {
  const response = await client.request('POST', '/api/v1/rpc', buyer.headers, { jsonrpc: '2.0', id: 1, method, params: { id } });
  return response.status === 200 && response.body.result !== undefined;
};
const get =
  (path: (id: string) => string, headers: Record<string, string> = {}) =>
  async (client: ReturnType<typeof createHttpClient>, id: string) =>
    (await client.request('GET', path(id), headers)).status === 200;
const targets: Target[] = [
  { name: 'bare node:http: SELECT a transaction', url: httpUrl, send: get((id) => `/transactions/${id}`) },
  { name: 'bare express 5: SELECT a transaction', url: expressUrl, send: get((id) => `/transactions/${id}`) },
  { name: 'REST GET /api/v1/transactions/{id}', url: appUrl, send: get((id) => `/api/v1/transactions/${id}`, buyer.headers) },
  { name: 'JSON-RPC tasks/get', url: appUrl, send: rpc('tasks/get') },
  { name: 'JSON-RPC GetTask', url: appUrl, send: rpc('GetTask') },
  { name: 'bare node:http: SELECT the accounts', url: httpUrl, send: get(() => `/wallet/${buyer.id}`) },
  { name: 'bare express 5: SELECT the accounts', url: expressUrl, send: get(() => `/wallet/${buyer.id}`) },
  { name: 'REST GET /api/v1/wallet/', url: appUrl, send: get(() => '/api/v1/wallet/', buyer.headers) },
];

/** `clients` connections each sending back to back for `seconds`: requests per second and each latency. */
async function measure(target: Target): Promise<{ perSecond: number; latencies: number[]; failed: number }> {
  const client = createHttpClient(target.url, clients);
  for (const id of transactionIds) await target.send(client, id); // warm: connections, prepared statements, caches
  const latencies: number[] = [];
  let failed = 0;
  const startedAt = performance.now();
  const endAt = startedAt + seconds * 1000;
  await Promise.all(
    transactionIds.map(async (id) => {
      while (performance.now() < endAt) {
        const sentAt = performance.now();
        if (!(await target.send(client, id))) failed += 1;
        latencies.push(performance.now() - sentAt);
      }
    }),
  );
  client.close();
  return { perSecond: latencies.length / ((performance.now() - startedAt) / 1000), latencies, failed };
}

const results = new Map(targets.map((target) => [target.name, { perSecond: [] as number[], latencies: [] as number[], failed: 0 }]));
for (let round = 0; round < rounds; round++) {
  const order = targets.map((_, index) => targets[(index + round) % targets.length]!);
  for (const target of order) {
    const { perSecond, latencies, failed } = await measure(target);
    const result = results.get(target.name)!;
    result.perSecond.push(perSecond);
    result.latencies.push(...latencies);
    result.failed += failed;
    progress(`round ${round + 1}/${rounds}: ${target.name}: ${Math.round(perSecond)} requests/s`);
  }
}
app.close();
for (const child of children) child.kill('SIGTERM');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;
// Each product read is compared with the bare express handler of the same SELECT.
const expressRate = (target: Target) =>
  median(
    results.get(
      target.name.includes('wallet') || target.name.includes('accounts') ? 'bare express 5: SELECT the accounts' : 'bare express 5: SELECT a transaction',
    )!.perSecond,
  );
console.log(`\nHot reads: ${clients} keep-alive clients, ${seconds} s per target and round, ${rounds} rounds; PostgreSQL and Redis on this machine`);
console.log('| target | requests/s (median of rounds) | vs bare express | p50 | p99 | failed |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const target of targets) {
  const result = results.get(target.name)!;
  const rate = median(result.perSecond);
  console.log(
    `| ${target.name} | ${Math.round(rate)} | ${(rate / expressRate(target)).toFixed(2)}x | ${percentile(result.latencies, 0.5).toFixed(2)} ms | ${percentile(result.latencies, 0.99).toFixed(2)} ms | ${result.failed} |`,
  );
}
saveResult({
  benchmark: 'read',
  title: 'Hot reads against bare handlers: `bench/read`',
  command: commandLine('bench:read'),
  metrics: targets
    .filter((target) => !target.name.startsWith('bare'))
    .map((target) => {
      const base = target.name.includes('wallet') ? 'bare express 5: SELECT the accounts' : 'bare express 5: SELECT a transaction';
      return {
        metric: `${target.name}, requests/s`,
        value: Math.round(median(results.get(target.name)!.perSecond)),
        unit: 'req/s',
        higherIsBetter: true,
        baseline: { name: base, value: Math.round(median(results.get(base)!.perSecond)) },
      };
    }),
});
const failures = [...results.values()].reduce((sum, result) => sum + result.failed, 0);
if (failures > 0) process.exitCode = 1;
