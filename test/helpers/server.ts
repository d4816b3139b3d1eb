import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventSource } from 'eventsource';
import { createAppServer } from '../../rest/app-server.ts';
import type { TestApp } from './app.ts';

/** A real listening server for clients that need a URL (EventSource, WebSocket, fetch). */
export async function listen(test: TestApp): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createAppServer(test.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    server,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
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
  const onMessage = (event: MessageEvent) => received.push({ id: event.lastEventId, type: event.type, data: JSON.parse(event.data) });
  for (const type of types) {
    source.addEventListener(type, onMessage);
  }
  const opened = new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (error) => reject(new Error('the event stream did not open', { cause: error }));
  });
  return { source, received, opened, close: () => source.close() };
}
