import { readFileSync } from 'node:fs';
import http from 'node:http';

/**
 * Many raw SSE connections (no EventSource overhead), each recording, for every event, the time
 * from the event's own timestamp to its arrival: same machine, same clock.
 */
export interface ClientPool {
  connected: () => number;
  latenciesMs: number[];
  received: () => number;
  close(): void;
}

export function openClients(count: number, target: (index: number) => { url: string; headers: Record<string, string> }, timestampOf: (data: string) => number): ClientPool {
  const latenciesMs: number[] = [];
  const requests: http.ClientRequest[] = [];
  let connected = 0;
  let received = 0;
  for (let index = 0; index < count; index++) {
    const { url, headers } = target(index);
    const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
      let buffer = '';
      let counted = false;
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (!counted) {
          counted = true;
          connected++;
        }
        buffer += chunk;
        let boundary = buffer.indexOf('\n\n');
        while (boundary !== -1) {
          const block = buffer.slice(0, boundary);
          buffer = buffer.slice(boundary + 2);
          const dataLine = block.split('\n').find((line) => line.startsWith('data: '));
          if (dataLine) {
            const sentAt = timestampOf(dataLine.slice(6));
            latenciesMs.push(Date.now() - sentAt);
            received++;
          }
          boundary = buffer.indexOf('\n\n');
        }
      });
    });
    request.on('error', () => {});
    requests.push(request);
  }
  return {
    connected: () => connected,
    latenciesMs,
    received: () => received,
    close: () => {
      for (const request of requests) request.destroy();
    },
  };
}

export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

export function residentBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : Number.NaN;
}
