import { randomUUID } from 'node:crypto';
import { categoryCodes } from '../../src/domain/categories.ts';
import { recreateDatabase } from '../lifecycle/database.ts';
import { benchAdminToken, startServer } from '../lifecycle/server.ts';
import { saveResult } from '../results.ts';

/**
 * The task hall at scale (issue 18): 10,000 open tasks published through the API (each bounty
 * held from its publisher's wallet, each row with its stored term vector and search column), then
 * pages of GET /api/v1/tasks/hall in each order and with text queries, through the real server
 * over HTTP on PostgreSQL and Redis. Aim: each kind of page p99 under 50 ms on this machine.
 * Baseline, interleaved in the same run: GET /api/v1/auth/me.
 *
 *   npm run bench:hall (runs the skill hall, then this) · tsx bench/hall/tasks.ts [--tasks 10000 --requests 200]
 */
const argument = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return position > 0 ? process.argv[position + 1]! : fallback;
};
const taskCount = Number(argument('tasks', '10000'));
const requests = Number(argument('requests', '200'));
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_task_hall';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const aimMs = 50;
const writers = 8;
const progress = (message: string) => process.stderr.write(`${message}\n`);

await recreateDatabase(databaseUrl);
const server = await startServer(databaseUrl, redisUrl, { migrate: true });
const base = server.baseUrl;

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await response.json()) as { code: number; data: any };
  if (json.code !== 0) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json.data;
}

const key = await call('POST', '/api/v1/admin/api-keys', { 'X-Admin-Token': benchAdminToken }, { agent_platform_type: 'custom_mcp', auto_provision: true });
const agent = () => ({ 'X-Api-Key': key.api_key as string, 'X-Platform-User-Id': randomUUID() });
const publishers = Array.from({ length: 50 }, agent);
const buyer = agent();

const subjects = ['logo', 'translation', 'python', 'react', 'video', 'podcast', 'tutoring', 'bookkeeping', 'seo', 'photography', 'contract', 'excel', 'shopify', 'illustration', 'voice', 'cleaning', 'repair', 'fitness', 'recruiting', 'animation'];
const qualifiers = ['fast', 'careful', 'senior', 'bilingual', 'affordable', 'creative', 'certified', 'remote', 'weekend', 'express'];
const cities = ['Hangzhou', 'Shanghai', 'Berlin', 'Paris', 'Austin', 'Lagos', 'Osaka', 'Lima'];
const taskOf = (index: number) => {
  const subject = subjects[index % subjects.length]!;
  const qualifier = qualifiers[(index * 7) % qualifiers.length]!;
  const offline = index % 5 === 0;
  return {
    title: `Need ${qualifier} ${subject} ${index}`,
    description: `Looking for ${qualifier} ${subject} work: ${subjects[(index * 3) % subjects.length]} and ${subjects[(index * 11) % subjects.length]} too. Delivery in ${1 + (index % 9)} days.`,
    category: categoryCodes[index % categoryCodes.length],
    tags: [subject, qualifier],
    mode: offline ? 'offline' : 'online',
    ...(offline ? { city: cities[index % cities.length] } : {}),
    ...(index % 7 === 0 ? {} : { bounty_amount: `${5 + (index % 200)}.${String(index % 100).padStart(2, '0')}` }),
    delivery_hours: 1 + (index % 72),
    expires_at: new Date(Date.now() + (1 + (index % 80)) * 86_400_000).toISOString(),
  };
};

progress('funding 50 publishers');
for (const publisher of publishers) {
  const me = await call('GET', '/api/v1/auth/me', publisher);
  await call('POST', '/api/v1/admin/wallet/credit', { 'X-Admin-Token': benchAdminToken }, { user_id: me.user_id, currency: 'UT', amount: '10000000.00' });
}
progress(`publishing ${taskCount} tasks through the API (${writers} writers)`);
let next = 0;
let created = 0;
await Promise.all(Array.from({ length: writers }, async () => {
  for (let index = next++; index < taskCount; index = next++) {
    await call('POST', '/api/v1/tasks/', publishers[index % publishers.length]!, taskOf(index));
    created += 1;
    if (created % 1000 === 0) progress(`  ${created} / ${taskCount}`);
  }
}));
await server.runtime.engine.dependencies.db.raw('ANALYZE tasks');

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;
async function timedMs(work: () => Promise<unknown>) {
  const startedAt = performance.now();
  await work();
  return performance.now() - startedAt;
}

const queries = ['logo design', 'translate a contract', 'python scripts', 'podcast voice', 'bookkeeping and tax', 'react front end', '翻译', 'video editing'];
const first = await call('GET', '/api/v1/tasks/hall?page_size=20', buyer);
const pages: [name: string, path: (index: number) => string][] = [
  ['newest, first page', () => '/api/v1/tasks/hall?page_size=20'],
  ['newest, next page by cursor', () => `/api/v1/tasks/hall?page_size=20&cursor=${first.next_cursor}`],
  ['category + bounty_asc', (index) => `/api/v1/tasks/hall?category=${categoryCodes[index % categoryCodes.length]}&sort=bounty_asc&page_size=20`],
  ['bounty range, bounty_desc', () => '/api/v1/tasks/hall?min_bounty=20&max_bounty=120&sort=bounty_desc&page_size=20'],
  ['deadline', () => '/api/v1/tasks/hall?sort=deadline&page_size=20'],
  ['offline in a city', (index) => `/api/v1/tasks/hall?mode=offline&city=${cities[index % cities.length]}&page_size=20`],
  ['text query, relevance', (index) => `/api/v1/tasks/hall?q=${encodeURIComponent(queries[index % queries.length]!)}&page_size=20`],
  ['market stats', () => '/api/v1/tasks/market/stats'],
];

const timings = new Map<string, number[]>(pages.map(([name]) => [name, []]));
const baseline: number[] = [];
progress(`${requests} requests of each kind of page, interleaved with the baseline`);
for (let index = 0; index < requests; index++) {
  for (const [name, path] of pages) timings.get(name)!.push(await timedMs(() => call('GET', path(index), buyer)));
  baseline.push(await timedMs(() => call('GET', '/api/v1/auth/me', buyer)));
  if ((index + 1) % 50 === 0) progress(`  ${index + 1} / ${requests}`);
}
await server.close();

const ms = (value: number) => `${value.toFixed(1)} ms`;
const baselineP99 = percentile(baseline, 0.99);
console.log(`\nTask hall: ${taskCount} open tasks, one client, sequential; baseline GET /auth/me p50 ${ms(percentile(baseline, 0.5))}, p99 ${ms(baselineP99)}`);
console.log('| page | n | p50 | p99 | aim (p99) |');
console.log('|---|---:|---:|---:|---|');
for (const [name, values] of timings) {
  console.log(`| ${name} | ${values.length} | ${ms(percentile(values, 0.5))} | ${ms(percentile(values, 0.99))} | < ${aimMs} ms: ${percentile(values, 0.99) < aimMs ? 'MET' : 'NOT MET'} |`);
}
saveResult({
  benchmark: 'task-hall', title: `The task hall at ${taskCount.toLocaleString('en')} open tasks (\`bench/hall/tasks.ts\`)`, command: `npx tsx bench/hall/tasks.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
  metrics: [...timings].map(([name, values]) => {
    const p99 = Number(percentile(values, 0.99).toFixed(1));
    return { metric: `task hall: ${name}, p99`, value: p99, unit: 'ms', baseline: { name: 'GET /auth/me p99', value: Number(baselineP99.toFixed(1)) }, aim: { text: `p99 < ${aimMs} ms`, met: p99 < aimMs } };
  }),
});
