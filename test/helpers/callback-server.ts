import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real seller's callback server on 127.0.0.1 for invoke tests. The path picks the behaviour;
 * every request is recorded (path, headers, raw body) so a test can check what was sent, how often,
 * and verify its signature.
 */
export interface ReceivedCallback {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

type Behaviour = (request: IncomingMessage, response: ServerResponse, body: string) => void;

export async function startCallbackServer() {
  const received: ReceivedCallback[] = [];
  const gates = new Map<string, () => void>();
  const hanging = new Set<ServerResponse>();
  let port = 0;
  const json = (response: ServerResponse, status: number, value: unknown) => {
    response.writeHead(status, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(value));
  };
  const behaviours: Record<string, Behaviour> = {
    '/ok': (_request, response, body) => json(response, 200, { result: { echo: JSON.parse(body).input, answered: true } }),
    '/slow': (_request, response, body) => setTimeout(() => json(response, 200, { result: { echo: JSON.parse(body).input } }), 300),
    '/null': (_request, response) => json(response, 200, { result: null }),
    '/array': (_request, response) => json(response, 200, { result: [1, 2] }),
    '/no-result': (_request, response) => json(response, 200, { answer: 1 }),
    '/status-500': (_request, response) => json(response, 500, { error: 'broken' }),
    '/not-json': (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end('{"result": {"unterminated"');
    },
    // Over 1 MiB, streamed without a Content-Length, so the reader must stop by counting.
    '/big': (_request, response) => {
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.write('{"result": {"padding": "');
      const chunk = 'x'.repeat(64 * 1024);
      for (let index = 0; index < 20; index++) response.write(chunk);
      response.end('"}}');
    },
    '/hang': (_request, response) => {
      hanging.add(response);
    },
    // Answers well, but only once the test opens the gate named by the query (?gate=name).
    '/gate': (request, response, body) => {
      const name = new URL(request.url!, 'http://x').searchParams.get('gate')!;
      gates.set(name, () => json(response, 200, { result: { echo: JSON.parse(body).input, late: true } }));
    },
    '/redirect-private': (_request, response) => {
      response.writeHead(307, { Location: 'http://10.255.255.1/ok' });
      response.end();
    },
    '/redirect-name': (_request, response) => {
      response.writeHead(307, { Location: `http://internal.invoke.test:${port}/ok` });
      response.end();
    },
    '/redirect-loopback': (_request, response) => {
      response.writeHead(308, { Location: `http://127.0.0.1:${port}/ok` });
      response.end();
    },
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = new URL(request.url!, 'http://x').pathname;
      received.push({ path, headers: request.headers, body });
      (behaviours[path] ?? ((_q, answer) => json(answer, 404, {})))(request, response, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    /** Requests received for a given transaction (by the payload's transaction_id). */
    receivedFor: (transactionId: string) => received.filter((entry) => entry.body.includes(transactionId)),
    gateReached: (name: string) => gates.has(name),
    openGate: (name: string) => gates.get(name)?.(),
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
