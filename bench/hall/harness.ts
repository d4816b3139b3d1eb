import { randomUUID } from 'node:crypto';
import { recreateDatabase } from '../lifecycle/database.ts';
import { benchAdminToken, startServer } from '../lifecycle/server.ts';
import { type Metric } from '../results.ts';

/**
 * What the two hall benchmarks (bench/hall/run.ts for skills, bench/hall/tasks.ts for tasks)
 * share: the real server on a fresh PostgreSQL database, API calls, rows written by parallel
 * writers with progress, and pages timed one client at a time, interleaved with the same-run
 * baseline GET /api/v1/auth/me (the same HTTP, authentication and envelope, no hall).
 */
export const aimMs = 50;
const progress = (message: string) => process.stderr.write(`${message}\n`);

export const argument = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return position > 0 ? process.argv[position + 1]! : fallback;
};

export const subjects = [
  'logo',
  'translation',
  'python',
  'react',
  'video',
  'podcast',
  'tutoring',
  'bookkeeping',
  'seo',
  'photography',
  'contract',
  'excel',
  'shopify',
  'illustration',
  'voice',
  'cleaning',
  'repair',
  'fitness',
  'recruiting',
  'animation',
];
export const qualifiers = ['fast', 'careful', 'senior', 'bilingual', 'affordable', 'creative', 'certified', 'remote', 'weekend', 'express'];
export const cities = ['Hangzhou', 'Shanghai', 'Berlin', 'Paris', 'Austin', 'Lagos', 'Osaka', 'Lima'];
export const queries = [
  'logo design',
  'translate a contract',
  'python scripts',
  'podcast voice',
  'bookkeeping and tax',
  'react front end',
  '翻译',
  'video editing',
];

export async function openHall(databaseName: string) {
  const databaseUrl = process.env.BENCH_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/${databaseName}`;
  await recreateDatabase(databaseUrl);
  const server = await startServer(databaseUrl, process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379', { migrate: true });

  async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const response = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as { code: number; data: any };
    if (json.code !== 0) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
    return json.data;
  }

  const admin = { 'X-Admin-Token': benchAdminToken };
  const key = await call('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true });
  const agent = () => ({ 'X-Api-Key': key.api_key as string, 'X-Platform-User-Id': randomUUID() });

  /** `count` rows written by 8 parallel writers, saying every thousand how far it got. */
  async function write(count: number, what: string, one: (index: number) => Promise<unknown>) {
    progress(`writing ${count} ${what} through the API (8 writers)`);
    let next = 0;
    let done = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let index = next++; index < count; index = next++) {
          await one(index);
          done += 1;
          if (done % 1000 === 0) progress(`  ${done} / ${count}`);
        }
      }),
    );
  }

  /** Each page `requests` times, one client, interleaved with the baseline; printed and returned as metrics. */
  async function measure(
    title: string,
    pages: [name: string, path: (index: number) => string][],
    requests: number,
    reader: Record<string, string>,
    prefix: string,
  ): Promise<Metric[]> {
    const timings = new Map<string, number[]>(pages.map(([name]) => [name, []]));
    const baseline: number[] = [];
    const timed = async (path: string) => {
      const startedAt = performance.now();
      await call('GET', path, reader);
      return performance.now() - startedAt;
    };
    progress(`${requests} requests of each kind of page, interleaved with the baseline`);
    for (let index = 0; index < requests; index++) {
      for (const [name, path] of pages) timings.get(name)!.push(await timed(path(index)));
      baseline.push(await timed('/api/v1/auth/me'));
      if ((index + 1) % 50 === 0) progress(`  ${index + 1} / ${requests}`);
    }
    await server.close();
    const ms = (value: number) => `${value.toFixed(1)} ms`;
    const baselineP99 = percentile(baseline, 0.99);
    console.log(`\n${title}, one client, sequential; baseline GET /auth/me p50 ${ms(percentile(baseline, 0.5))}, p99 ${ms(baselineP99)}`);
    console.log('| page | n | p50 | p99 | aim (p99) |\n|---|---:|---:|---:|---|');
    for (const [name, values] of timings) {
      console.log(
        `| ${name} | ${values.length} | ${ms(percentile(values, 0.5))} | ${ms(percentile(values, 0.99))} | < ${aimMs} ms: ${percentile(values, 0.99) < aimMs ? 'MET' : 'NOT MET'} |`,
      );
    }
    return [...timings].map(([name, values]) => {
      const p99 = Number(percentile(values, 0.99).toFixed(1));
      return {
        metric: `${prefix}: ${name}, p99`,
        value: p99,
        unit: 'ms',
        baseline: { name: 'GET /auth/me p99', value: Number(baselineP99.toFixed(1)) },
        aim: { text: `p99 < ${aimMs} ms`, met: p99 < aimMs },
      };
    });
  }

  return { server, call, admin, agent, write, measure };
}

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;
