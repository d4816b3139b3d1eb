import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkWebhook } from './conformance.ts';

/** A webhook or push receiver on loopback, for the delivery tests (the app needs CALLBACK_ALLOW_PRIVATE to reach it). */
export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver whose paths answer from a script of statuses (the last one repeats), recording every request. */
export async function startReceiver() {
  const received: Received[] = [];
  const scripts = new Map<string, number[]>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url!;
      const body = Buffer.concat(chunks).toString('utf8');
      // A signed webhook (not an A2A push) is held against the document's webhooks entry.
      if (request.headers['webhook-signature'] !== undefined) checkWebhook(body);
      received.push({ path, headers: request.headers, body });
      const script = scripts.get(path) ?? [200];
      const status = script.length > 1 ? script.shift()! : script[0]!;
      response.writeHead(status, { 'Content-Type': 'text/plain' });
      response.end(status === 200 ? 'ok' : 'receiver trouble');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    received,
    base,
    url: (path: string, statuses?: number[]) => {
      if (statuses) scripts.set(path, statuses);
      return `${base}${path}`;
    },
    at: (path: string) => received.filter((request) => request.path === path),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
