import { type Server, type Socket, createServer, connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/database.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type TestApp, startTestApp, usingRealBackends } from '../helpers/app.ts';
import { cloneTemplate } from '../helpers/databases.ts';

/**
 * PostgreSQL or Redis going away and coming back (issue 16, point 1), made real with a TCP proxy
 * between the server and each backend that the test cuts (every connection dropped, new ones
 * refused) and restores. While PostgreSQL is cut, requests answer 503 with Retry-After and the
 * envelope's code 5030 naming the database, never 500, and /readyz says which dependency is
 * missing; while Redis is cut, what needs no Redis keeps answering and /readyz says the bus is
 * missing; service resumes by itself when the backend returns.
 */
interface Proxy {
  url(base: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function proxyTo(port: number): Promise<Proxy> {
  let down = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const own = (server.address() as AddressInfo).port;
  return {
    url: (base) => {
      const url = new URL(base);
      url.host = `127.0.0.1:${own}`;
      return url.toString();
    },
    cut() {
      down = true;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      down = false;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Retries `read` until it answers as `done` says, within a bound: the backend is back, the pool reconnects. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, withinMs = 20_000): Promise<T> {
  const until = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.runIf(usingRealBackends() && Boolean(process.env.TEST_REDIS_URL))('a backend going away and coming back', () => {
  let database: Proxy;
  let redis: Proxy;
  let test: TestApp;
  let agent: Actor;
  let clone: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    clone = await cloneTemplate(process.env.TEST_DATABASE_URL!);
    database = await proxyTo(Number(new URL(clone.url).port || 5432));
    redis = await proxyTo(Number(new URL(process.env.TEST_REDIS_URL!).port || 6379));
    test = await startTestApp({ REDIS_URL: redis.url(process.env.TEST_REDIS_URL!) }, { database: await openPostgres(database.url(clone.url)), migrate: false });
    agent = await createAgent(test);
  });
  afterAll(async () => {
    await test?.close();
    await Promise.all([database?.close(), redis?.close()]);
    await clone?.drop();
  });

  it('answers 503 with Retry-After while PostgreSQL is away, says so on /readyz, and serves again when it is back', async () => {
    expect((await test.http.get('/api/v1/wallet/').set(agent.headers)).status).toBe(200);
    database.cut();
    try {
      for (const request of [
        test.http.get('/api/v1/wallet/').set(agent.headers),
        test.http.post('/api/v1/demands').set(agent.headers).send({ description: 'Translate a contract' }),
      ]) {
        const response = await request;
        expect(response.status, JSON.stringify(response.body)).toBe(503);
        expect(response.body).toMatchObject({ code: 5030, message: 'unavailable', data: { dependency: 'database' } });
        expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
      const ready = await test.http.get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.data).toMatchObject({ database: false, bus: true });
      expect((await test.http.get('/healthz')).status).toBe(200);
    } finally {
      database.restore();
    }
    const back = await eventually(
      () => test.http.get('/api/v1/wallet/').set(agent.headers),
      (response) => response.status === 200,
    );
    expect(back.status).toBe(200);
    expect((await test.http.get('/readyz')).status).toBe(200);
  });

  it('keeps serving what needs no Redis while Redis is away, says so on /readyz, and recovers when it is back', async () => {
    redis.cut();
    try {
      const ready = await eventually(
        () => test.http.get('/readyz'),
        (response) => response.status === 503,
        10_000,
      );
      expect(ready.status).toBe(503);
      expect(ready.body.data).toMatchObject({ database: true, bus: false });
      const wallet = await test.http.get('/api/v1/wallet/').set(agent.headers);
      expect(wallet.status, JSON.stringify(wallet.body)).toBe(200);
    } finally {
      redis.restore();
    }
    const back = await eventually(
      () => test.http.get('/readyz'),
      (response) => response.status === 200,
    );
    expect(back.status).toBe(200);
  });
});
