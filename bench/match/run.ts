import { commandLine, saveResult } from '../results.ts';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { recreateDatabase, withClient } from '../lifecycle/database.ts';
import { benchAdminToken, startServer } from '../lifecycle/server.ts';
import { benchDemands, listingAt } from './catalogue.ts';

/**
 * Matching latency as the market grows: POST /api/v1/capabilities/match (top_k 10) at 1,000,
 * 10,000 and 100,000 capabilities in PostgreSQL, through the real server over HTTP. The aim
 * (issue 9) is p99 at 100,000 at most 3x p99 at 1,000: the index finds candidates, not a scan.
 *
 * Baseline, measured in the same run and interleaved with the match requests: GET /api/v1/auth/me,
 * the same HTTP, authentication and envelope path with no matching behind it. The run also reads
 * PostgreSQL's counters to show which plan did the work (index scans and sequential scans of the
 * capabilities table while the match requests ran).
 *
 *   npm run bench:match [-- --scales 1000,10000,100000 --requests 300]
 *   BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bench_match) is dropped and recreated.
 */
const argument = (name: string, fallback: string) => {
  const position = process.argv.indexOf(`--${name}`);
  return position > 0 ? process.argv[position + 1]! : fallback;
};
const scales = argument('scales', '1000,10000,100000').split(',').map(Number);
const requestsPerScale = Number(argument('requests', '300'));
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench_match';
const redisUrl = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const seedBatchSize = 5_000;

const progress = (message: string) => process.stderr.write(`${message}\n`);

await recreateDatabase(databaseUrl);
const server = await startServer(databaseUrl, redisUrl, { migrate: true });
const base = server.baseUrl;

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await response.json()) as { code: number; data: any };
  if (json.code !== 0) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** An agent as a platform creates one: a human account linked to an API key. */
async function agent(apiKey: { id: string; api_key: string }) {
  const signup = await call('POST', '/api/v1/auth/signup', {}, { email: `bench-${randomUUID()}@example.com`, password: 'bench-password-42' });
  await call('POST', `/api/v1/admin/api-keys/${apiKey.id}/links`, { 'X-Admin-Token': benchAdminToken }, { user_id: signup.user_id });
  return { userId: signup.user_id as string, headers: { 'X-Api-Key': apiKey.api_key, 'X-Platform-User-Id': signup.user_id as string } };
}

const apiKey = await call('POST', '/api/v1/admin/api-keys', { 'X-Admin-Token': benchAdminToken }, { agent_platform_type: 'custom_mcp' });
const seller = await agent(apiKey);
const buyer = await agent(apiKey);
const demandIds: string[] = [];
for (const description of benchDemands) {
  demandIds.push((await call('POST', '/api/v1/demands', buyer.headers, { description, max_price_ut: '150.00' })).id);
}

/** Listings go straight into the table in batches (the API would take hours at 100,000). */
async function seedUpTo(client: pg.Client, from: number, to: number) {
  for (let start = from; start < to; start += seedBatchSize) {
    const listings = Array.from({ length: Math.min(seedBatchSize, to - start) }, (_, offset) => listingAt(start + offset));
    await client.query(
      `INSERT INTO capabilities (id, owner_user_id, owner_type, title, description, category, capability_type, pricing_model, price, tags,
         callback_url, callback_secret, created_at, updated_at)
       SELECT gen_random_uuid(), $1, 'agent', title, description, category, 'service', 'per_use', price, tags::jsonb,
         'https://seller.example/callback', 'cbs_bench', now(), now()
       FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[]) AS listing(title, description, category, price, tags)`,
      [
        seller.userId,
        listings.map((l) => l.title),
        listings.map((l) => l.description),
        listings.map((l) => l.category),
        listings.map((l) => l.priceMinorUnits),
        listings.map((l) => JSON.stringify(l.tags)),
      ],
    );
    progress(`  seeded ${Math.min(start + seedBatchSize, to).toLocaleString('en')} / ${to.toLocaleString('en')} capabilities`);
  }
  await client.query('ANALYZE capabilities');
}

async function scanCounters(client: pg.Client) {
  // Statistics reach the views up to a second late (PostgreSQL 15 flushes them on a timer).
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await client.query('SELECT pg_stat_clear_snapshot()');
  const table = await client.query(
    `SELECT seq_scan::int AS seq_scan, coalesce(idx_scan, 0)::int AS idx_scan FROM pg_stat_user_tables WHERE relname = 'capabilities'`,
  );
  return { sequentialScans: table.rows[0].seq_scan as number, indexScans: table.rows[0].idx_scan as number };
}

const percentile = (values: number[], share: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;

async function timedMs(work: () => Promise<unknown>) {
  const startedAt = performance.now();
  await work();
  return performance.now() - startedAt;
}

interface Row {
  capabilities: number;
  matchP50: number;
  matchP99: number;
  baseP50: number;
  baseP99: number;
  meanCandidates: number;
  sequentialScans: number;
  indexScans: number;
}
const rows: Row[] = [];
await withClient(databaseUrl, async (client) => {
  let seeded = 0;
  for (const scale of scales) {
    progress(`scale ${scale.toLocaleString('en')}: seeding`);
    await seedUpTo(client, seeded, scale);
    seeded = scale;
    for (const demandId of demandIds) await call('POST', '/api/v1/capabilities/match', buyer.headers, { demand_id: demandId, top_k: 10 });
    const before = await scanCounters(client);
    const match: number[] = [];
    const baseline: number[] = [];
    let candidates = 0;
    for (let index = 0; index < requestsPerScale; index++) {
      const demandId = demandIds[index % demandIds.length]!;
      match.push(
        await timedMs(
          async () => (candidates += (await call('POST', '/api/v1/capabilities/match', buyer.headers, { demand_id: demandId, top_k: 10 })).candidates.length),
        ),
      );
      baseline.push(await timedMs(() => call('GET', '/api/v1/auth/me', buyer.headers)));
      if ((index + 1) % 100 === 0) progress(`  ${index + 1} / ${requestsPerScale} match requests`);
    }
    const after = await scanCounters(client);
    rows.push({
      capabilities: scale,
      matchP50: percentile(match, 0.5),
      matchP99: percentile(match, 0.99),
      baseP50: percentile(baseline, 0.5),
      baseP99: percentile(baseline, 0.99),
      meanCandidates: candidates / requestsPerScale,
      sequentialScans: after.sequentialScans - before.sequentialScans,
      indexScans: after.indexScans - before.indexScans,
    });
  }
});
await server.close();

const ms = (value: number) => `${value.toFixed(1)} ms`;
const round1 = (value: number) => Number(value.toFixed(1));
console.log(
  `\nPOST /api/v1/capabilities/match, top_k 10, ${requestsPerScale} requests per scale over ${demandIds.length} demands (zh and en), one client, sequential`,
);
console.log(
  '| capabilities | match p50 | match p99 | baseline GET /auth/me p50 | baseline p99 | candidates returned (mean) | index scans of capabilities | seq scans of capabilities |',
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.capabilities.toLocaleString('en')} | ${ms(row.matchP50)} | ${ms(row.matchP99)} | ${ms(row.baseP50)} | ${ms(row.baseP99)} | ${row.meanCandidates.toFixed(1)} | ${row.indexScans} | ${row.sequentialScans} |`,
  );
}
const first = rows[0]!;
const last = rows.at(-1)!;
const ratio = last.matchP99 / first.matchP99;
console.log(
  `\np99 at ${last.capabilities.toLocaleString('en')} / p99 at ${first.capabilities.toLocaleString('en')} = ${ratio.toFixed(2)}x (aim: at most 3x) ${ratio <= 3 ? 'MET' : 'NOT MET'}`,
);
saveResult({
  benchmark: 'match',
  title: 'Matching as the market grows: `bench/match`',
  command: commandLine('bench:match'),
  metrics: [
    ...rows.flatMap((row) => [
      {
        metric: `match p50 at ${row.capabilities.toLocaleString('en')} capabilities`,
        value: round1(row.matchP50),
        unit: 'ms',
        baseline: { name: 'GET /auth/me p50', value: round1(row.baseP50) },
      },
      {
        metric: `match p99 at ${row.capabilities.toLocaleString('en')} capabilities`,
        value: round1(row.matchP99),
        unit: 'ms',
        baseline: { name: 'GET /auth/me p99', value: round1(row.baseP99) },
      },
    ]),
    {
      metric: `p99 at ${last.capabilities.toLocaleString('en')} / p99 at ${first.capabilities.toLocaleString('en')}`,
      value: Number(ratio.toFixed(2)),
      unit: 'x',
      aim: { text: 'at most 3x', met: ratio <= 3 },
    },
  ],
});
