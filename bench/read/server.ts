import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { createAppServer } from '../../rest/app-server.ts';
import { createApp } from '../../src/app.ts';
import { openRuntime } from '../../src/bootstrap.ts';
import { loadConfig, rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { userAccountId } from '../../src/store/accounts.ts';
import { benchAdminToken, benchJwtSecret } from '../lifecycle/server.ts';

/**
 * One server of bench/read/run.ts, in a process of its own (argv: app | express | http, database
 * URL, Redis URL), so that no two share a thread with each other or with the client:
 * - app: the product as src/main.ts starts it, on PostgreSQL and Redis, with every rate-limit
 *   bucket on (set far above the load, so each request still pays for checking them);
 * - express: bare express 5 handlers that run the same SELECT (one transaction; a user's
 *   accounts) over a pg pool and answer it as JSON: no authentication, no rate limits;
 * - http: the same on node:http alone.
 * Prints `listening <url>`.
 */
const [mode, databaseUrl, redisUrl] = process.argv.slice(2) as ['app' | 'express' | 'http', string, string];
const announce = (server: ReturnType<typeof createServer>) =>
  server.listen(0, '127.0.0.1', () => process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));

if (mode === 'app') {
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    JWT_SECRET: benchJwtSecret,
    ADMIN_TOKEN: benchAdminToken,
    LOG_LEVEL: 'warn',
    PUBLIC_BASE_URL: 'http://127.0.0.1',
    ...Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), '100000000/60'])),
  });
  const runtime = await openRuntime(config, createLogger(config.LOG_LEVEL), { migrate: true });
  const server = createAppServer(createApp(runtime.engine));
  server.keepAliveTimeout = 120_000;
  announce(server);
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => void runtime.close().then(() => process.exit(0)));
  });
} else {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const read = async (id: string) => (await pool.query({ name: 'read-transaction', text: 'SELECT * FROM transactions WHERE id = $1', values: [id] })).rows[0];
  // The wallet's read: the caller's two accounts (UT and CNY) by their derived ids.
  const wallet = async (userId: string) =>
    (
      await pool.query({
        name: 'read-wallet',
        text: 'SELECT * FROM accounts WHERE id = ANY($1::uuid[])',
        values: [[userAccountId(userId, 'UT'), userAccountId(userId, 'CNY')]],
      })
    ).rows;
  let server: ReturnType<typeof createServer>;
  if (mode === 'express') {
    const app = express();
    app.get('/transactions/:id', async (request, response) => {
      response.json({ code: 0, data: await read(request.params.id) });
    });
    app.get('/wallet/:userId', async (request, response) => {
      response.json({ code: 0, data: await wallet(request.params.userId) });
    });
    server = createServer(app);
  } else {
    server = createServer((request, response) => {
      const [, kind, id] = request.url!.split('/') as [string, string, string];
      void (kind === 'wallet' ? wallet(id) : read(id)).then((data) => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code: 0, data }));
      });
    });
  }
  server.keepAliveTimeout = 120_000;
  announce(server);
  process.on('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => void pool.end().then(() => process.exit(0)));
  });
}
