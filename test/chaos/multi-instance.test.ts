import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloneTemplate } from '../helpers/databases.ts';
import { type RunningProcess, startRedis, startRedisOnFreePort, startServer } from '../helpers/processes.ts';
import { openEventSource } from '../helpers/server.ts';

/**
 * Two server processes on one PostgreSQL and one Redis: a subscriber on instance A must see every
 * change made through instance B, in order and exactly once, even across a Redis restart.
 * Needs real PostgreSQL (TEST_DATABASE_URL); vitest.config.ts includes it only then.
 */
const adminToken = 'multi-instance-admin-token-0123456789';
let redisPort: number;
let redis: RunningProcess;
let database: Awaited<ReturnType<typeof cloneTemplate>>;
let instanceA: Awaited<ReturnType<typeof startServer>>;
let instanceB: Awaited<ReturnType<typeof startServer>>;
let environment: Record<string, string>;
const loginsPerAccount = 6;

beforeAll(async () => {
  ({ redis, port: redisPort } = await startRedisOnFreePort());
  database = await cloneTemplate(process.env.TEST_DATABASE_URL!);
  environment = {
    DATABASE_URL: database.url,
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    ADMIN_TOKEN: adminToken,
    JWT_SECRET: 'multi-instance-jwt-secret-0123456789',
    LOG_LEVEL: 'info',
    NODE_ENV: 'test',
    RATE_LIMIT_SIGNUP_PER_ADDRESS: '100000/3600',
    RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: `${loginsPerAccount}/300`,
  };
  [instanceA, instanceB] = await Promise.all([startServer(environment), startServer(environment)]);
}, 120_000);

afterAll(async () => {
  await Promise.all([instanceA?.stop(), instanceB?.stop()]);
  await redis?.stop();
  await database?.drop();
});

async function call(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as { code: number; data: Record<string, unknown> & { id: string } };
  if (json.code !== 0) throw new Error(`${method} ${path}: ${JSON.stringify(json)}`);
  return json.data;
}

async function agent(base: string) {
  const admin = { 'X-Admin-Token': adminToken };
  const key = await call(base, 'POST', '/api/v1/admin/api-keys', admin, { agent_platform_type: 'custom_mcp' });
  const user = await call(base, 'POST', '/api/v1/auth/signup', {}, { email: `${randomUUID()}@example.com`, password: 'multi-instance-1' });
  await call(base, 'POST', `/api/v1/admin/api-keys/${key.id}/links`, admin, { user_id: user.user_id });
  return { userId: user.user_id as string, headers: { 'X-Api-Key': key.api_key as string, 'X-Platform-User-Id': user.user_id as string } };
}

/** A buyer credited with `funds`, a seller, and the seller's capability at 2.00, all made through `base`. */
async function market(base: string, funds: string) {
  const buyer = await agent(base);
  const seller = await agent(base);
  await call(base, 'POST', '/api/v1/admin/wallet/credit', { 'X-Admin-Token': adminToken }, { user_id: buyer.userId, currency: 'UT', amount: funds });
  const capability = await call(base, 'POST', '/api/v1/capabilities', seller.headers, {
    title: 'Echo',
    description: 'Echoes',
    category: 'data',
    capability_type: 'tool',
    pricing_model: 'per_use',
    price_ut: '2.00',
    callback_url: 'https://seller.example/callback',
  });
  return { buyer, seller, capability };
}

async function lifecycles(
  base: string,
  count: number,
  buyer: { headers: Record<string, string> },
  seller: { headers: Record<string, string> },
  capabilityId: string,
) {
  for (let index = 0; index < count; index++) {
    const created = await call(base, 'POST', '/api/v1/transactions', { ...buyer.headers, 'Idempotency-Key': randomUUID() }, { capability_id: capabilityId });
    await call(base, 'POST', `/api/v1/transactions/${created.id}/freeze`, buyer.headers);
    await call(base, 'POST', `/api/v1/transactions/${created.id}/accept`, seller.headers);
    await call(base, 'POST', `/api/v1/transactions/${created.id}/deliver`, seller.headers, { result_payload: { index } });
    await call(base, 'POST', `/api/v1/transactions/${created.id}/confirm`, buyer.headers);
  }
}

describe('two instances behind one Redis', () => {
  it('delivers on A every change made through B, in order and exactly once, across a Redis restart', async () => {
    const { buyer, seller, capability } = await market(instanceB.url, '1000.00');

    const first = openEventSource(`${instanceA.url}/api/v1/transactions/events`, buyer.headers);
    await first.opened;
    await lifecycles(instanceB.url, 3, buyer, seller, capability.id);
    // Generous budgets: CI machines are shared. The exact sequence is asserted afterwards, so a
    // duplicate or a gap fails with a precise difference rather than a timeout.
    await expect.poll(() => first.received.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(15);
    expect(first.received.map((event) => Number(event.id))).toEqual(Array.from({ length: 15 }, (_, index) => index + 1));

    // Redis goes away mid-stream; changes keep committing through B meanwhile.
    await redis.stop();
    await lifecycles(instanceB.url, 2, buyer, seller, capability.id);
    redis = await startRedis(redisPort);
    first.close();
    const lastSeen = first.received.at(-1)!.id;

    const resumed = openEventSource(`${instanceA.url}/api/v1/transactions/events`, { ...buyer.headers, 'Last-Event-ID': lastSeen });
    await resumed.opened;
    await lifecycles(instanceB.url, 1, buyer, seller, capability.id);
    await expect.poll(() => first.received.length + resumed.received.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(30);
    resumed.close();

    const all = [...first.received, ...resumed.received].map((event) => Number(event.id));
    expect(all).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    // Within each transaction, the statuses arrive in lifecycle order.
    const byTransaction = new Map<string, string[]>();
    for (const event of [...first.received, ...resumed.received]) {
      byTransaction.set(event.data.transaction_id, [...(byTransaction.get(event.data.transaction_id) ?? []), event.data.data.transaction.status]);
    }
    expect([...byTransaction.values()]).toEqual(Array.from({ length: 6 }, () => ['pending_freeze', 'frozen', 'accepted', 'delivered', 'settled']));
  }, 180_000);
});

describe('the task stream on two instances', () => {
  it('delivers on A every task move made through B, in order and once for each recipient', async () => {
    const publisher = await agent(instanceB.url);
    const applicant = await agent(instanceB.url);
    await call(
      instanceB.url,
      'POST',
      '/api/v1/admin/wallet/credit',
      { 'X-Admin-Token': adminToken },
      { user_id: publisher.userId, currency: 'UT', amount: '100.00' },
    );
    const types = ['task.published', 'task.updated', 'task.closed', 'task.matched', 'application.submitted', 'application.accepted', 'application.rejected'];
    const [publisherStream, applicantStream] = [
      openEventSource(`${instanceA.url}/api/v1/tasks/events`, publisher.headers, types),
      openEventSource(`${instanceA.url}/api/v1/tasks/events`, applicant.headers, types),
    ];
    await Promise.all([publisherStream.opened, applicantStream.opened]);
    const skill = await call(instanceB.url, 'POST', '/api/v1/skills/', applicant.headers, {
      name: 'Editing',
      description: 'Copy editing',
      category: 'copywriting',
    });
    const tasks = [];
    for (let index = 0; index < 3; index++) {
      const task = await call(instanceB.url, 'POST', '/api/v1/tasks/', publisher.headers, {
        title: `Edit chapter ${index}`,
        description: 'Ten pages',
        mode: 'online',
        bounty_amount: '5.00',
      });
      const application = await call(instanceB.url, 'POST', `/api/v1/tasks/${task.id}/applications`, applicant.headers, { skill_id: skill.id });
      await call(instanceB.url, 'PUT', `/api/v1/tasks/${task.id}`, publisher.headers, { bounty_amount: '6.00' });
      if (index === 0) await call(instanceB.url, 'POST', `/api/v1/tasks/${task.id}/applications/${application.id}/accept`, publisher.headers, {});
      else await call(instanceB.url, 'POST', `/api/v1/tasks/${task.id}/close`, publisher.headers, {});
      tasks.push(task.id);
    }
    // Each close also ends the pending application, told to both (application.rejected).
    const expected = { publisher: 15, applicant: 12 };
    await expect
      .poll(() => [publisherStream.received.length, applicantStream.received.length], { timeout: 30_000 })
      .toEqual([expected.publisher, expected.applicant]);
    expect(publisherStream.received.map((event) => Number(event.id))).toEqual(Array.from({ length: expected.publisher }, (_, index) => index + 1));
    expect(applicantStream.received.map((event) => Number(event.id))).toEqual(Array.from({ length: expected.applicant }, (_, index) => index + 1));
    expect(applicantStream.received.map((event) => event.type)).toEqual([
      'application.submitted',
      'task.updated',
      'task.matched',
      'application.accepted',
      'application.submitted',
      'task.updated',
      'task.closed',
      'application.rejected',
      'application.submitted',
      'task.updated',
      'task.closed',
      'application.rejected',
    ]);
    for (const stream of [publisherStream, applicantStream]) stream.close();
  }, 120_000);
});

describe('webhook deliveries across a SIGKILL', () => {
  it('sends every event at least once when the sending instance dies mid-delivery: another takes over after the lease', async () => {
    // The receiver never answers its first request (the instance dies holding it), then answers 200.
    const received: { id: string; type: string }[] = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ id: String(request.headers['webhook-id']), type: (JSON.parse(body) as { type: string }).type });
        if (received.length > 1) response.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    // A database of its own: the other instances of this file would claim deliveries too.
    const own = await cloneTemplate(process.env.TEST_DATABASE_URL!);
    const withPrivate = { ...environment, DATABASE_URL: own.url, CALLBACK_ALLOW_PRIVATE: 'true' };
    const doomed = await startServer(withPrivate);
    let survivor: Awaited<ReturnType<typeof startServer>> | undefined;
    try {
      const { buyer, seller, capability } = await market(doomed.url, '100.00');
      await call(doomed.url, 'POST', '/api/v1/webhooks', buyer.headers, { url: hooks, event_types: ['transaction.*'] });
      const bought = await call(
        doomed.url,
        'POST',
        '/api/v1/transactions',
        { ...buyer.headers, 'Idempotency-Key': randomUUID() },
        { capability_id: capability.id },
      );
      await call(doomed.url, 'POST', `/api/v1/transactions/${bought.id}/freeze`, buyer.headers, {});
      await call(doomed.url, 'POST', `/api/v1/transactions/${bought.id}/accept`, seller.headers, {});
      await expect.poll(() => received.length, { timeout: 30_000 }).toBe(1);
      doomed.child.kill('SIGKILL');
      survivor = await startServer(withPrivate);
      await expect.poll(() => received.length, { timeout: 90_000, interval: 500 }).toBe(4);
      // The first event twice, with the same delivery id; then the rest, in order, once each.
      expect(received.map((each) => each.type)).toEqual([
        'transaction.pending_freeze',
        'transaction.pending_freeze',
        'transaction.frozen',
        'transaction.accepted',
      ]);
      expect(received[1]!.id).toBe(received[0]!.id);
    } finally {
      doomed.child.kill('SIGKILL');
      await survivor?.stop();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await own.drop();
    }
  }, 150_000);
});

describe('rate limits shared by two instances', () => {
  it('counts wrong logins made through A and B in one bucket, and refuses the next on either', async () => {
    const email = `${randomUUID()}@example.com`;
    await call(instanceA.url, 'POST', '/api/v1/auth/signup', {}, { email, password: 'multi-instance-1' });
    const login = async (base: string) => {
      const response = await fetch(`${base}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email, password: 'wrong-password-1' }),
      });
      return ((await response.json()) as { code: number }).code;
    };
    const codes = [];
    for (let index = 0; index < loginsPerAccount; index++) codes.push(await login(index % 2 === 0 ? instanceA.url : instanceB.url));
    expect(codes).toEqual(Array.from({ length: loginsPerAccount }, () => 4010));
    expect([await login(instanceA.url), await login(instanceB.url)]).toEqual([4290, 4290]);
  }, 60_000);
});

describe('one server with two workers (WORKERS=2)', () => {
  it('runs concurrent lifecycles on one port, delivers every event once and in order, and stops on SIGTERM', async () => {
    const server = await startServer({ ...environment, WORKERS: '2' });
    try {
      await expect.poll(() => (server.output().match(/"message":"listening"/g) ?? []).length, { timeout: 60_000 }).toBe(2);
      const { buyer, seller, capability } = await market(server.url, '100.00');

      // The stream lives on one worker; parallel requests spread over both. Events made on the
      // other worker reach the stream through Redis.
      const stream = openEventSource(`${server.url}/api/v1/transactions/events`, buyer.headers);
      await stream.opened;
      await Promise.all(Array.from({ length: 4 }, () => lifecycles(server.url, 2, buyer, seller, capability.id)));
      await expect.poll(() => stream.received.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(40);
      stream.close();
      expect(stream.received.map((event) => Number(event.id))).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
      const wallet = await call(server.url, 'GET', '/api/v1/wallet/', buyer.headers);
      expect(wallet.ut).toMatchObject({ available: '84.00', frozen: '0.00' });
    } finally {
      await server.stop();
    }
    expect(server.child.exitCode).toBe(0);
    expect(server.output().match(/"message":"stopped"/g)).toHaveLength(3);
  }, 180_000);
});

/**
 * The worker processes of a cluster primary: its children running the same Node binary (tsx also
 * starts esbuild). Told by the executable, not the process name: Node 24 names its main thread
 * "MainThread", which is what /proc shows as a worker's name.
 */
function workerPids(primaryPid: number): number[] {
  const nodeBinary = realpathSync(process.execPath);
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === primaryPid && realpathSync(`/proc/${pid}/exe`) === nodeBinary;
      } catch {
        return false;
      }
    });
}

describe('a worker that dies', () => {
  it('is replaced by the primary, and the server keeps answering', async () => {
    const server = await startServer({ ...environment, WORKERS: '2' });
    try {
      await expect.poll(() => (server.output().match(/"message":"listening"/g) ?? []).length, { timeout: 60_000 }).toBe(2);
      const [victim] = workerPids(server.child.pid!);
      expect(victim).toBeDefined();
      process.kill(victim!, 'SIGKILL');
      await expect.poll(() => (server.output().match(/"message":"listening"/g) ?? []).length, { timeout: 60_000 }).toBe(3);
      expect(server.output()).toContain('worker exited; starting another');
      expect(workerPids(server.child.pid!)).toHaveLength(2);
      for (let request = 0; request < 6; request++) expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await server.stop();
    }
    expect(server.child.exitCode).toBe(0);
  }, 120_000);
});
