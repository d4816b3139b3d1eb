import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { attachRpcWebSocket } from '../../rpc/index.ts';
import { createAgent, createApiKey } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { listen } from '../helpers/server.ts';

/**
 * What the per-address and per-API-key buckets are keyed by, as a client meets it: failed
 * authentications by address, all the users of one API key together, IPv6 clients by /64.
 */
const opened: TestApp[] = [];
async function app(environment: Record<string, string> = {}) {
  const test = await startTestApp({ TRUST_PROXY: 'true', ...environment });
  opened.push(test);
  return test;
}
afterEach(async () => {
  await Promise.all(opened.splice(0).map((test) => test.close()));
});

const wrongKey = { 'X-Api-Key': 'mk_wrongwrongwrong_0000000000000000', 'X-Platform-User-Id': '00000000-0000-4000-8000-000000000000' };

/** The HTTP status a WebSocket upgrade gets: 101 when it opens, else the refusal's status. */
const upgradeStatus = (url: string, headers: Record<string, string>) =>
  new Promise<number>((resolve) => {
    const socket = new WebSocket(`${url.replace('http', 'ws')}/api/v1/rpc/ws`, { headers });
    socket.on('open', () => (socket.close(), resolve(101)));
    socket.on('unexpected-response', (_request, response) => (response.resume(), resolve(response.statusCode ?? 0)));
    socket.on('error', () => {});
  });

describe('authentication failures per address', () => {
  it('refuses credentials from an address with too many failed authentications before looking them up, REST and JSON-RPC', async () => {
    const test = await app({ RATE_LIMIT_AUTHENTICATION_FAILURES_PER_ADDRESS: '4/60' });
    const agent = await createAgent(test);
    const codes = [];
    for (let index = 0; index < 3; index++)
      codes.push((await test.http.get('/api/v1/transactions').set('X-Forwarded-For', '203.0.113.5').set(wrongKey)).body.code);
    const rpc = await test.http
      .post('/api/v1/rpc')
      .set('X-Forwarded-For', '203.0.113.5')
      .set(wrongKey)
      .send({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } });
    expect([...codes, rpc.status]).toEqual([4010, 4010, 4010, 401]);
    const refused = await test.http
      .post('/api/v1/rpc')
      .set('X-Forwarded-For', '203.0.113.5')
      .set(wrongKey)
      .send({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: randomUUID() } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.body.error.data.code).toBe(4290);
    // Even valid credentials wait at that address; another address is not affected.
    expect((await test.http.get('/api/v1/transactions').set('X-Forwarded-For', '203.0.113.5').set(agent.headers)).body.code).toBe(4290);
    expect((await test.http.get('/api/v1/transactions').set('X-Forwarded-For', '203.0.113.6').set(agent.headers)).body.code).toBe(0);
    // A request without credentials costs no lookup and is not refused for it.
    expect((await test.http.get('/api/v1/transactions').set('X-Forwarded-For', '203.0.113.5')).body.code).toBe(4010);
  });

  it('counts failed WebSocket upgrades and then refuses the upgrade with 429', async () => {
    const test = await app({ TRUST_PROXY: 'false', RATE_LIMIT_AUTHENTICATION_FAILURES_PER_ADDRESS: '3/60' });
    const served = await listen(test);
    const sockets = attachRpcWebSocket(served.server, test.runtime.engine);
    try {
      const upgrade = (headers: Record<string, string>) => upgradeStatus(served.url, headers);
      const statuses = [];
      for (let index = 0; index < 4; index++) statuses.push(await upgrade(wrongKey));
      expect(statuses).toEqual([401, 401, 401, 429]);
    } finally {
      await sockets.close();
      await served.close();
    }
  });
});

describe('WebSocket upgrades behind a trusted proxy', () => {
  it('count failures by the client address X-Forwarded-For names, as REST does, not by the proxy', async () => {
    const test = await app({ TRUST_PROXY: 'loopback', RATE_LIMIT_AUTHENTICATION_FAILURES_PER_ADDRESS: '2/60' });
    const served = await listen(test);
    const sockets = attachRpcWebSocket(served.server, test.runtime.engine);
    try {
      const upgrade = (headers: Record<string, string>) => upgradeStatus(served.url, headers);
      const attacker = { ...wrongKey, 'X-Forwarded-For': '203.0.113.7' };
      const statuses = [];
      for (let index = 0; index < 3; index++) statuses.push(await upgrade(attacker));
      expect(statuses).toEqual([401, 401, 429]);
      // Another client behind the same proxy is not blocked by the attacker's failures.
      expect(await upgrade({ ...wrongKey, 'X-Forwarded-For': '198.51.100.4' })).toBe(401);
      // And REST counts the same address in the same bucket.
      expect((await test.http.get('/api/v1/transactions').set(attacker)).status).toBe(429);
    } finally {
      await sockets.close();
      await served.close();
    }
  });
});

describe('per API key, all its users together', () => {
  it('limits an auto-provisioning key across the new users it brings', async () => {
    const test = await app({ RATE_LIMIT_READS_PER_API_KEY: '5/60' });
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const statuses = [];
    for (let index = 0; index < 7; index++) {
      statuses.push((await test.http.get('/api/v1/transactions').set({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    // Another key's users are not affected.
    const other = await createAgent(test);
    expect((await test.http.get('/api/v1/transactions').set(other.headers)).status).toBe(200);
  });

  it('limits the JSON-RPC calls of all the users of a key together', async () => {
    const test = await app({ RATE_LIMIT_RPC_CALLS_PER_API_KEY: '3/60' });
    const key = await createApiKey(test, 'custom_mcp', { auto_provision: true });
    const call = { jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: randomUUID() } };
    const statuses = [];
    for (let index = 0; index < 4; index++) {
      statuses.push((await test.http.post('/api/v1/rpc').set({ 'X-Api-Key': key.api_key, 'X-Platform-User-Id': randomUUID() }).send(call)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

describe('IPv6 clients', () => {
  it('share one per-address bucket per /64; IPv4 addresses count one by one', async () => {
    const test = await app({ RATE_LIMIT_REQUESTS_PER_ADDRESS: '2/60' });
    const from = async (address: string) => (await test.http.get('/api/v1/categories').set('X-Forwarded-For', address)).status;
    expect([await from('2001:db8:1:2::1'), await from('2001:db8:1:2:ffff::9'), await from('2001:db8:1:2::abcd')]).toEqual([200, 200, 429]);
    expect(await from('2001:db8:1:3::1')).toBe(200);
    expect([await from('192.0.2.1'), await from('192.0.2.1'), await from('192.0.2.2')]).toEqual([200, 200, 200]);
  });
});
