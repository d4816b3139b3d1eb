import { checkEvent } from './conformance.ts';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventSource } from 'eventsource';
import { createAppServer } from '../../rest/app-server.ts';
import type { TestApp } from './app.ts';

/** Ends a test's server: its open connections (streams, keep-alive) first, or close() would wait for them. */
function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Listens on a port the system chooses, on 127.0.0.1; answers that port. */
async function listenOnFreePort(server: Server): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

/** A real listening server for clients that need a URL (EventSource, WebSocket, fetch). */
export async function listen(test: TestApp): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createAppServer(test.app);
  const port = await listenOnFreePort(server);
  return { server, url: `http://127.0.0.1:${port}`, close: () => closeServer(server) };
}

/**
 * A server that listens before the app it serves exists, for tests whose app must know its own
 * address (PUBLIC_BASE_URL) when it is built. Asking the system for a free port, letting it go and
 * listening on it again after the app has started leaves seconds in which another process may take
 * it; CI saw exactly that (EADDRINUSE, then a hook that never finished). Here the port is never let
 * go: the server holds it from the start and hands requests to the app once `serve` is called.
 */
export interface HeldPort {
  server: Server;
  port: number;
  /** `http://127.0.0.1:<port>` */
  base: string;
  serve(app: RequestListener): void;
  close(): Promise<void>;
}

export async function holdPort(): Promise<HeldPort> {
  let app: RequestListener | undefined;
  const server = createServer((request, response) => {
    if (app) return void app(request, response);
    // Nothing should call before the app is handed over; if something does, it hears so at once.
    response.writeHead(503).end();
  });
  const port = await listenOnFreePort(server);
  return {
    server,
    port,
    base: `http://127.0.0.1:${port}`,
    serve(handler) {
      app = handler;
    },
    close: () => closeServer(server),
  };
}

export interface ReceivedEvent {
  id: string;
  type: string;
  data: { transaction_id: string; type: string; data: { transaction: { status: string; id: string } } };
}

/** A plain EventSource client that sends credentials as headers and collects what it receives. */
const transactionEventTypes = [
  'transaction.pending_freeze',
  'transaction.frozen',
  'transaction.accepted',
  'transaction.delivered',
  'transaction.settled',
  'transaction.cancelled_by_buyer',
  'transaction.rejected_by_seller',
  'transaction.disputed',
  'transaction.refunded',
  'transaction.failed',
  'too_old',
];

export function openEventSource(url: string, headers: Record<string, string>, types: readonly string[] = transactionEventTypes) {
  const received: ReceivedEvent[] = [];
  const source = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
  });
  const onMessage = (event: MessageEvent) => {
    const data = JSON.parse(event.data as string) as ReceivedEvent['data'];
    checkEvent(event.type, data);
    received.push({ id: event.lastEventId, type: event.type, data });
  };
  for (const type of types) {
    source.addEventListener(type, onMessage);
  }
  const opened = new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (error) => reject(new Error('the event stream did not open', { cause: error }));
  });
  return { source, received, opened, close: () => source.close() };
}
