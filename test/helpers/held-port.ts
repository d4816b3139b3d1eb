import { createServer, type RequestListener, type Server } from 'node:http';

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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as { port: number };
  return {
    server,
    port,
    base: `http://127.0.0.1:${port}`,
    serve(handler) {
      app = handler;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
