import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app.ts';
import { openRuntime } from '../../src/bootstrap.ts';
import { loadConfig } from '../../src/config.ts';
import { openPglite } from '../../src/db/database.ts';
import { createInProcessBus } from '../../src/events/bus.ts';
import { createLogger } from '../../src/logger.ts';

/**
 * The server for bench/openapi/run.ts, in a process of its own so that the client's parsing does
 * not share its thread: embedded database, in-process bus, the access log at info into a sink
 * (so its cost is counted, not the terminal's). Prints its URL.
 */
const config = loadConfig({ NODE_ENV: 'test', JWT_SECRET: 'bench-jwt-secret-0123456789', ADMIN_TOKEN: 'bench-admin-token-0123456789', LOG_LEVEL: 'info' });
const runtime = await openRuntime(
  config,
  createLogger('info', () => {}),
  { database: await openPglite('memory'), bus: createInProcessBus() },
);
const server = createServer(createApp(runtime.engine));
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
process.on('SIGTERM', () => server.close(() => void runtime.close().then(() => process.exit(0))));
