import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.ts';
import { openRuntime } from '../../src/bootstrap.ts';
import { loadConfig, rateLimitNames, rateLimitVariable } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { benchAdminToken, benchJwtSecret } from '../lifecycle/server.ts';

/**
 * The product for bench/webhooks/run.ts, in a process of its own (argv: database URL, Redis URL),
 * as src/main.ts starts it with its webhook worker running. CALLBACK_ALLOW_PRIVATE lets deliveries
 * reach the bench's receivers on loopback; rate limits are off, so the bench measures delivery
 * alone. Prints `listening <url>`.
 */
const [databaseUrl, redisUrl] = process.argv.slice(2) as [string, string];
const config = loadConfig({
  NODE_ENV: 'production',
  DATABASE_URL: databaseUrl,
  REDIS_URL: redisUrl,
  JWT_SECRET: benchJwtSecret,
  ADMIN_TOKEN: benchAdminToken,
  LOG_LEVEL: 'warn',
  PUBLIC_BASE_URL: 'http://127.0.0.1',
  CALLBACK_ALLOW_PRIVATE: 'true',
  ...Object.fromEntries(rateLimitNames.map((name) => [rateLimitVariable(name), 'off'])),
});
const runtime = await openRuntime(config, createLogger(config.LOG_LEVEL), { migrate: true });
runtime.engine.webhooks.start();
const server = createServer(createApp(runtime.engine));
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => {
  runtime.engine.webhooks.stop();
  server.closeAllConnections();
  server.close(() => void runtime.close().then(() => process.exit(0)));
});
