import { randomUUID } from 'node:crypto';
import knex from 'knex';
import { limits } from '../../src/limits.ts';
import type { Plan, Row } from './measure.ts';
import { measure } from './measure.ts';
import { log, startProcess } from './processes.ts';

/**
 * The product as bench/fanout measures it: the real server (src/main.ts, NODE_ENV=production) on
 * PostgreSQL and Redis, 10 buyers whose purchases are the changes, each buyer's subscribers on
 * `GET /api/v1/transactions/events` with that buyer's credentials.
 */
const adminToken = 'bench-fanout-admin-token-0123456789';
export const buyerCount = 10;

export async function recreateDatabase(url: string) {
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

export interface ProductOptions {
  databaseUrl: string;
  redisUrl: string;
  workers: number;
}

/** The product started and set up for `subscribers` subscribers; `stop()` when done. */
export async function startProduct(subscribers: number, options: ProductOptions) {
  await recreateDatabase(options.databaseUrl);
  const server = await startProcess(
    ['src/main.ts'],
    {
      DATABASE_URL: options.databaseUrl,
      REDIS_URL: options.redisUrl,
      ADMIN_TOKEN: adminToken,
      JWT_SECRET: 'bench-fanout-jwt-secret-0123456789',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
      WORKERS: String(options.workers),
      // The setup (a few signups, hundreds of admin calls) all comes from 127.0.0.1 and is not what
      // is measured; the caps on open streams per credential stay as in production.
      RATE_LIMIT_SIGNUP_PER_ADDRESS: 'off',
      RATE_LIMIT_REQUESTS_PER_ADDRESS: 'off',
    },
    /"message":"listening",(?:"worker":\d+,)?"url":"(http:\/\/[^"]+)"/g,
    options.workers,
  );
  try {
    log(`product: server pid ${server.pid} (${options.workers === 1 ? 'one process' : `${options.workers} workers`}) at ${server.url}`);
    const seller = await agent(server.url);
    const buyers: Awaited<ReturnType<typeof agent>>[] = [];
    for (let index = 0; index < buyerCount; index++) buyers.push(await agent(server.url));
    for (const buyer of buyers) {
      await api(
        server.url,
        'POST',
        '/api/v1/admin/wallet/credit',
        { 'X-Admin-Token': adminToken },
        { user_id: buyer.userId, currency: 'UT', amount: '100000.00' },
      );
    }
    const capability = await api(server.url, 'POST', '/api/v1/capabilities', seller.headers, {
      title: 'Bench',
      description: 'Bench',
      category: 'data',
      capability_type: 'tool',
      pricing_model: 'per_use',
      price_ut: '1.00',
      callback_url: 'https://seller.example/callback',
    });
    const credentials: Record<string, string>[][] = [];
    for (const buyer of buyers) credentials.push(await subscriberCredentials(server.url, buyer, Math.ceil(subscribers / buyerCount)));
    log(`product: ${credentials[0]!.length} credentials per buyer (at most ${limits.sseStreamsPerCredentialMax} streams each)`);
    // Subscriber i listens to buyer i % buyerCount, through that buyer's credential number
    // floor(i / buyerCount / streams per credential).
    const targets = Array.from({ length: subscribers }, (_, index) => ({
      url: `${server.url}/api/v1/transactions/events`,
      headers: credentials[index % buyerCount]![Math.floor(Math.floor(index / buyerCount) / limits.sseStreamsPerCredentialMax)]!,
    }));
    /** Change `index`: a purchase by buyer index mod 10, an event for that buyer's subscribers. */
    const change = async (index: number) => {
      const buyer = buyers[index % buyerCount]!;
      await api(server.url, 'POST', '/api/v1/transactions', { ...buyer.headers, 'Idempotency-Key': randomUUID() }, { capability_id: capability.id });
    };
    return { server, targets, change };
  } catch (error) {
    server.stop();
    throw error;
  }
}

export async function measureProduct(subscribers: number, plan: Plan, options: ProductOptions): Promise<Row> {
  const { server, targets, change } = await startProduct(subscribers, options);
  try {
    const name = options.workers === 1 ? 'product (SSE via Redis)' : `product (SSE via Redis), WORKERS=${options.workers}`;
    return await measure(name, server, targets, plan, change);
  } finally {
    server.stop();
  }
}
