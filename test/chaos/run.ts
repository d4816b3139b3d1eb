import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import knex from 'knex';
import { recreateDatabase } from '../../bench/lifecycle/database.ts';
import { rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { checkBooks } from '../helpers/books.ts';
import { type Instance, chaosAdminToken, instance, restartPostgres, restartRedis } from './servers.ts';
import { subscribe } from './subscribers.ts';
import { type Market, type Party, createWorkload, newLog } from './workload.ts';

/**
 * The bank chaos test (issue 16, point 1): concurrent clients trade over REST, JSON-RPC (HTTP and
 * WebSocket) and MCP against two server instances on PostgreSQL and Redis, while instances are
 * killed with SIGKILL and restarted, and PostgreSQL and Redis are each restarted once. The books
 * are checked at snapshots and at the end (test/helpers/books.ts), the subscribers' streams and
 * every idempotency key's effects too. Prints a table; exits 1 naming every violation.
 *
 *   npm run chaos                                  (10 minutes, 16 clients)
 *   npm run chaos -- --seconds 150 --kill-every 12 (the CI variant: every fault at least once)
 *   CHAOS_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/chaos) is dropped and recreated.
 * It restarts this machine's PostgreSQL and Redis: run it where nothing else needs them.
 */
const argument = (name: string, fallback: number) => {
  const position = process.argv.indexOf(`--${name}`);
  return position > 0 ? Number(process.argv[position + 1]) : fallback;
};
const seconds = argument('seconds', 600);
const clients = argument('clients', 16);
const killEverySeconds = argument('kill-every', 20);
const databaseUrl = process.env.CHAOS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/chaos';
const redisUrl = process.env.CHAOS_REDIS_URL ?? 'redis://127.0.0.1:6379';
const progress = (message: string) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${message}\n`);

// A seller's callback for the invoke capability: answers at once.
const callback = createServer((request, response) => {
  request.resume();
  request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ result: { ok: true } })));
});
await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
const callbackUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/invoke`;

progress(`recreating ${databaseUrl}`);
await recreateDatabase(databaseUrl);
const environment = {
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  CALLBACK_ALLOW_PRIVATE: 'true',
  SWEEPER_INTERVAL_MS: '2000',
  PLATFORM_FEE_BPS: '250',
  ...Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), 'off'])),
};
const instances: Instance[] = [instance('A', 3901, environment), instance('B', 3902, environment)];
progress('starting two instances (the first migrates)');
await instances[0]!.start();
await instances[1]!.start();

const market = await openMarket(instances[0]!.url);
const log = newLog();
const faults = { 'SIGKILL of an instance': 0, 'PostgreSQL restart': 0, 'Redis restart': 0 };
const checks = { 'book snapshots': 0, 'readiness named the missing dependency': 0 };
const startedAt = Date.now();
const until = startedAt + seconds * 1000;
const finished = () => Date.now() >= until;

const subscriptions = market.buyers.slice(0, 4).map((buyer) => subscribe(instances, buyer, finished));
const workload = createWorkload(instances, market, log);
progress(`${clients} clients for ${seconds} s; a SIGKILL about every ${killEverySeconds} s; PostgreSQL restarts at 1/3, Redis at 2/3`);
const db = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 2 }, acquireConnectionTimeout: 5_000 });
const violations: string[] = [];

await Promise.all([
  ...Array.from({ length: clients }, (_, index) => workload.client(market.buyers[index % market.buyers.length]!, until)),
  faultLoop(),
  snapshotLoop(),
]);
progress('workload over: faults stop; waiting for both instances and the sweeper');
for (const each of instances) if (!each.up) await each.start();
await Promise.all(subscriptions.map((each) => each.done));
await new Promise((resolve) => setTimeout(resolve, 5_000));
violations.push(...(await checkBooks(db)).map((violation) => `final books: ${violation}`));
checks['book snapshots'] += 1;
for (const [key, ids] of log.keyEffects) if (ids.size > 1) violations.push(`idempotency key ${key} made ${ids.size} transactions`);
for (const { subscription } of subscriptions) violations.push(...subscription.violations);
violations.push(...log.violations);
await Promise.all(instances.map((each) => each.stop()));
await db.destroy();
callback.close();
report();

async function faultLoop() {
  const thirds = [startedAt + (until - startedAt) / 3, startedAt + (2 * (until - startedAt)) / 3];
  let postgresDone = false;
  let redisDone = false;
  while (!finished()) {
    await new Promise((resolve) => setTimeout(resolve, killEverySeconds * 1000 * (0.5 + Math.random())));
    if (finished()) return;
    if (!postgresDone && Date.now() >= thirds[0]!) {
      postgresDone = true;
      progress('restarting PostgreSQL');
      const down = restartPostgres(6_000);
      await probeReadiness('database');
      await down;
      faults['PostgreSQL restart'] += 1;
    } else if (!redisDone && Date.now() >= thirds[1]!) {
      redisDone = true;
      progress('restarting Redis');
      const down = restartRedis(6_000);
      await probeReadiness('bus');
      await down;
      faults['Redis restart'] += 1;
    } else {
      const victim = instances[Math.floor(Math.random() * instances.length)]!;
      progress(`SIGKILL ${victim.name}`);
      victim.kill();
      faults['SIGKILL of an instance'] += 1;
      await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * 1_500));
      await victim.start();
    }
  }
}

/** While a backend is down, /readyz must say which. */
async function probeReadiness(dependency: 'database' | 'bus') {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  // All at once: the backend is down for a few seconds only.
  await Promise.all(
    instances
      .filter((one) => one.up)
      .map(async (each) => {
        const response = await fetch(`${each.url}/readyz`, { signal: AbortSignal.timeout(4_000) }).catch(() => null);
        const body = response ? ((await response.json()) as { data?: Record<string, boolean> }) : null;
        if (response?.status === 503 && body?.data?.[dependency] === false) checks['readiness named the missing dependency'] += 1;
        else violations.push(`/readyz of ${each.name} while the ${dependency} was down answered ${response?.status} ${JSON.stringify(body)}`);
      }),
  );
}

async function snapshotLoop() {
  while (!finished()) {
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    // One consistent snapshot of a moving market: every rule holds at any moment (a change commits
    // with its ledger entries and events); a snapshot the database cannot give now is skipped.
    const found = await checkBooks(db).catch(() => null);
    if (!found) continue;
    checks['book snapshots'] += 1;
    violations.push(...found.map((violation) => `snapshot at ${Math.round((Date.now() - startedAt) / 1000)} s: ${violation}`));
  }
}

async function openMarket(base: string): Promise<Market> {
  const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = (await response.json()) as { code: number; data: any };
    if (answer.code !== 0) throw new Error(`${method} ${path}: ${JSON.stringify(answer)}`);
    return answer.data;
  };
  const admin = { 'X-Admin-Token': chaosAdminToken };
  const key = await call('POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp', auto_provision: true });
  const party = async (): Promise<Party> => {
    const headers = { 'X-Api-Key': key.api_key as string, 'X-Platform-User-Id': randomUUID() };
    return { headers, id: (await call('GET', '/api/v1/auth/me', headers)).user_id };
  };
  const buyers = await Promise.all(Array.from({ length: 8 }, party));
  const sellers = await Promise.all(Array.from({ length: 3 }, party));
  for (const buyer of buyers)
    await call('POST', '/api/v1/admin/wallet/credit', { ...admin, 'Idempotency-Key': randomUUID() }, { user_id: buyer.id, currency: 'UT', amount: '500.00' });
  const capabilities: Market['capabilities'] = [];
  for (const [index, seller] of sellers.entries()) {
    const offered = await call('POST', '/api/v1/capabilities', seller.headers, {
      title: `An hour of legal translation ${index}`,
      description: 'Translate a contract into Chinese',
      category: 'translation',
      capability_type: 'service',
      pricing_model: 'per_hour',
      price_ut: `${index + 1}.00`,
    });
    capabilities.push({ id: offered.id, seller, invoke: false });
  }
  const invoked = await call('POST', '/api/v1/capabilities', sellers[0]!.headers, {
    title: 'Instant summary',
    description: 'Summarise a text',
    category: 'ai_automation',
    capability_type: 'service',
    pricing_model: 'per_query',
    price_ut: '0.50',
    callback_url: callbackUrl,
  });
  capabilities.push({ id: invoked.id, seller: sellers[0]!, invoke: true });
  return { buyers, sellers, capabilities };
}

function report() {
  const rows = [...log.counts.entries()].sort(([left], [right]) => left.localeCompare(right));
  console.log(`\nChaos: ${seconds} s, ${clients} clients, 2 instances, PostgreSQL and Redis\n`);
  console.log('| operation | ok | failed | unknown |\n|---|---:|---:|---:|');
  for (const [kind, counts] of rows) console.log(`| ${kind} | ${counts.ok} | ${counts.failed} | ${counts.unknown} |`);
  const total = rows.reduce((sum, [, counts]) => sum + counts.ok + counts.failed + counts.unknown, 0);
  console.log(
    `| all | ${rows.reduce((sum, [, c]) => sum + c.ok, 0)} | ${rows.reduce((sum, [, c]) => sum + c.failed, 0)} | ${rows.reduce((sum, [, c]) => sum + c.unknown, 0)} |  (${total} operations)`,
  );
  console.log('\n| fault | injected |\n|---|---:|');
  for (const [fault, count] of Object.entries(faults)) console.log(`| ${fault} | ${count} |`);
  const received = subscriptions.reduce((sum, { subscription }) => sum + subscription.received, 0);
  const reconnects = subscriptions.reduce((sum, { subscription }) => sum + subscription.reconnects, 0);
  console.log('\n| check | runs |\n|---|---:|');
  for (const [check, count] of Object.entries(checks)) console.log(`| ${check} | ${count} |`);
  console.log(`| idempotency keys checked | ${log.keyEffects.size} |`);
  console.log(`| events received by ${subscriptions.length} subscribers (reconnects) | ${received} (${reconnects}) |`);
  const missingFaults = Object.entries(faults)
    .filter(([, count]) => count === 0)
    .map(([fault]) => `no ${fault} was injected`);
  const all = [...violations, ...missingFaults];
  if (all.length === 0) {
    console.log('\nNo violation.');
    process.exit(0);
  }
  console.log(`\n${all.length} violation(s), by kind:`);
  const kinds = new Map<string, number>();
  for (const violation of all)
    kinds.set(
      violation.replace(/[0-9a-f]{8}-[0-9a-f-]{27}|\{.*$|\d+/g, '…'),
      (kinds.get(violation.replace(/[0-9a-f]{8}-[0-9a-f-]{27}|\{.*$|\d+/g, '…')) ?? 0) + 1,
    );
  for (const [kind, count] of kinds) console.log(`- ${count} x ${kind}`);
  console.log('the first ones in full:');
  for (const violation of all.slice(0, 20)) console.log(`- ${violation.slice(0, 400)}`);
  process.exit(1);
}
