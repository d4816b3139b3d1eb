import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { limits } from '../../src/limits.ts';
import { recreateDatabase } from '../lifecycle/database.ts';
import { createHttpClient } from '../lifecycle/http.ts';
import { benchAdminToken } from '../lifecycle/server.ts';
import { commandLine, saveResult } from '../results.ts';

/**
 * One owner's hanging receivers against another owner's ping (issue 28, point 6). The product runs
 * in a process of its own with its webhook worker on (bench/webhooks/server.ts). A quiet owner
 * pings its webhook, whose receiver answers at once, `--pings` times one after another: the time
 * from the ping request to the POST reaching the receiver is its delivery latency. Then a flooding
 * owner points `--hooks` webhooks at a receiver that never answers and pings them `--flood` times
 * in all, and the quiet owner pings again as before. Both receivers are in this process, so
 * both ends of a latency are read on one clock.
 *
 *   npm run bench:webhooks
 *   tsx bench/webhooks/run.ts [--pings 20] [--hooks 10] [--flood 120]
 *   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_webhooks) is dropped and recreated.
 */
const argument = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return Number(position > 0 ? process.argv[position + 1]! : fallback);
};
const pings = argument('pings', '20');
const hooks = argument('hooks', '10');
const flood = argument('flood', '120');
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_webhooks';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const progress = (message: string) => process.stderr.write(`${message}\n`);
/** A ping not delivered within this long counts as this long: the run must end even when deliveries starve. */
const pingWaitMaxMs = 120_000;

const children: ChildProcess[] = [];
// A failed run must not leave its server behind.
process.on('exit', () => children.forEach((child) => child.kill('SIGKILL')));
function startServer(): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/webhooks/server.ts', databaseUrl, redisUrl], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const match = /listening (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
  });
}

/** The prompt receiver answers 200 at once and tells each arrival (by the ping's delivery id); the hanging one never answers. */
const arrivals = new Map<string, (at: number) => void>();
const hanging = new Set<ServerResponse>();
const prompt = createServer((request, response) => {
  const at = performance.now();
  request.resume().on('end', () => {
    arrivals.get(String(request.headers['webhook-id']))?.(at);
    response.writeHead(200).end('ok');
  });
});
const stuck = createServer((request, response) => {
  request.resume();
  hanging.add(response);
});
const listen = (server: ReturnType<typeof createServer>) =>
  new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));

progress('recreating the database; starting the product (migrating) and the two receivers');
await recreateDatabase(databaseUrl);
const [appUrl, promptUrl, stuckUrl] = await Promise.all([startServer(), listen(prompt), listen(stuck)]);
const app = createHttpClient(appUrl, 4);
const key = await app.call<{ api_key: string }>(
  'POST',
  '/api/v1/admin/api-keys',
  { 'X-Admin-Token': benchAdminToken },
  { agent_platform_type: 'custom_mcp', auto_provision: true },
  201,
);
const ownerHeaders = () => ({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() });
const [quiet, flooder] = [ownerHeaders(), ownerHeaders()];
const subscribe = (headers: Record<string, string>, url: string) =>
  app.call<{ id: string }>('POST', '/api/v1/webhooks', headers, { url, event_types: ['task.*'] }, 201);
const quietHook = await subscribe(quiet, `${promptUrl}/quiet`);

/** Pings the quiet owner's webhook and waits for the POST to reach its receiver: milliseconds from the request to the arrival. */
async function quietPing(): Promise<number> {
  const sentAt = performance.now();
  const { delivery_id: id } = await app.call<{ delivery_id: string }>('POST', `/api/v1/webhooks/${quietHook.id}/ping`, quiet, undefined, 201);
  const arrivedAt = await new Promise<number>((resolve) => {
    const timer = setTimeout(() => resolve(sentAt + pingWaitMaxMs), pingWaitMaxMs);
    arrivals.set(id, (at) => {
      clearTimeout(timer);
      resolve(at);
    });
  });
  arrivals.delete(id);
  return arrivedAt - sentAt;
}
async function quietPings(phase: string): Promise<number[]> {
  const latencies: number[] = [];
  for (let index = 0; index < pings; index++) {
    latencies.push(await quietPing());
    progress(`${phase}: ping ${index + 1}/${pings} delivered in ${latencies.at(-1)!.toFixed(1)} ms`);
  }
  return latencies;
}

for (let index = 0; index < 3; index++) await quietPing(); // warm: connections, prepared statements
const quietLatencies = await quietPings('no flood');
const floodHooks = [];
for (let index = 0; index < hooks; index++) floodHooks.push(await subscribe(flooder, `${stuckUrl}/hang/${index}`));
for (let index = 0; index < flood; index++) await app.call('POST', `/api/v1/webhooks/${floodHooks[index % hooks]!.id}/ping`, flooder, undefined, 201);
// Let the flood take whatever sending slots it can before the quiet owner pings again.
while (hanging.size === 0) await new Promise((resolve) => setTimeout(resolve, 50));
await new Promise((resolve) => setTimeout(resolve, 500));
const heldByFlood = hanging.size;
progress(`flood: ${flood} pings to ${hooks} webhooks whose receiver never answers; ${heldByFlood} sends held open`);
const floodLatencies = await quietPings('flood');

app.close();
for (const response of hanging) response.destroy();
prompt.close();
stuck.closeAllConnections();
stuck.close();
for (const child of children) child.kill('SIGTERM');

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;
const round = (value: number) => Math.round(value * 10) / 10;
const aimMs = 1_000;
console.log(`\nAnother owner's ping while one owner's ${hooks} webhooks hang (${flood} pings): ${pings} pings each phase, one after another`);
console.log("| phase | p50 | p99 | max | the flood's sends held open |");
console.log('|---|---:|---:|---:|---:|');
console.log(
  `| no flood | ${round(percentile(quietLatencies, 0.5))} ms | ${round(percentile(quietLatencies, 0.99))} ms | ${round(Math.max(...quietLatencies))} ms | 0 |`,
);
console.log(
  `| flood | ${round(percentile(floodLatencies, 0.5))} ms | ${round(percentile(floodLatencies, 0.99))} ms | ${round(Math.max(...floodLatencies))} ms | ${heldByFlood} |`,
);
saveResult({
  benchmark: 'webhooks',
  title: "One owner's hanging receivers against another's ping: `bench/webhooks`",
  command: commandLine('bench:webhooks'),
  metrics: [
    {
      metric: `another owner's ping to arrival p50, while one owner's ${hooks} webhooks hang with ${flood} pings`,
      value: round(percentile(floodLatencies, 0.5)),
      unit: 'ms',
      baseline: { name: 'the same, no flood', value: round(percentile(quietLatencies, 0.5)) },
    },
    {
      metric: `another owner's ping to arrival p99, while one owner's ${hooks} webhooks hang with ${flood} pings`,
      value: round(percentile(floodLatencies, 0.99)),
      unit: 'ms',
      baseline: { name: 'the same, no flood', value: round(percentile(quietLatencies, 0.99)) },
      aim: { text: `under ${aimMs} ms`, met: percentile(floodLatencies, 0.99) < aimMs },
    },
    {
      metric: 'sends the flooding owner holds open',
      value: heldByFlood,
      unit: 'sends',
      baseline: { name: "the instance's sending slots", value: limits.webhookSendsInFlightMax },
    },
  ],
});
