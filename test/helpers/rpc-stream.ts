import { randomUUID } from 'node:crypto';
import type { Actor } from './actors.ts';

type Json = Record<string, any>;

/** Every result of a JSON-RPC streaming method over SSE, until the server ends the stream. */
export async function rpcStreamResults(endpoint: string, actor: Actor, method: string, params: unknown, headers: Record<string, string> = {}): Promise<Json[]> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream', ...actor.headers, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
  });
  const text = await response.text();
  return text
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join(''),
    )
    .filter((data) => data !== '')
    .map((data) => (JSON.parse(data) as Json).result);
}
