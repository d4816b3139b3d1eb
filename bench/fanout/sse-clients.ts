import http from 'node:http';

/**
 * Many raw SSE connections (no EventSource overhead), each recording, for every event, the time
 * from the event's own timestamp to its arrival: same machine, same clock.
 */
export interface ClientPool {
  connected: () => number;
  reconnects: () => number;
  latenciesMs: number[];
  received: () => number;
  close(): void;
}

const connectBatchSize = 500;

export interface ClientTarget {
  url: string;
  headers: Record<string, string>;
}

export function openClients(count: number, target: (index: number) => ClientTarget, timestampOf: (data: string) => number): ClientPool {
  const latenciesMs: number[] = [];
  const requests = new Set<http.ClientRequest>();
  let connected = 0;
  let received = 0;
  let reconnects = 0;
  let closed = false;
  // Like EventSource, a connection that fails before it is established tries again.
  const connect = (index: number) => {
    const { url, headers } = target(index);
    let established = false;
    const retry = () => {
      requests.delete(request);
      if (closed || established) return;
      reconnects++;
      setTimeout(() => connect(index), 200);
    };
    const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        response.on('end', retry);
        return;
      }
      let buffer = '';
      let counted = false;
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        if (!counted) {
          counted = true;
          established = true;
          connected++;
        }
        // The client's own work per frame lands in the measured latency of every later frame,
        // so it is kept small: no splitting into lines, one timestamp read per event.
        buffer = buffer === '' ? chunk : buffer + chunk;
        let start = 0;
        let boundary = buffer.indexOf('\n\n');
        while (boundary !== -1) {
          // `data:` with or without the space after it (the specification allows both; better-sse omits it).
          const data = buffer.indexOf('data:', start);
          if (data !== -1 && data < boundary) {
            const value = buffer.charCodeAt(data + 5) === 32 ? data + 6 : data + 5;
            latenciesMs.push(Date.now() - timestampOf(buffer.slice(value, buffer.indexOf('\n', data))));
            received++;
          }
          start = boundary + 2;
          boundary = buffer.indexOf('\n\n', start);
        }
        buffer = start === buffer.length ? '' : buffer.slice(start);
      });
    });
    request.on('error', retry);
    requests.add(request);
  };
  // Open in batches: each batch waits until the previous one is established.
  let opened = 0;
  const openBatch = () => {
    if (closed || opened >= count) return;
    const until = Math.min(count, opened + connectBatchSize);
    for (; opened < until; opened++) connect(opened);
    const waitForBatch = setInterval(() => {
      if (connected >= opened || closed) {
        clearInterval(waitForBatch);
        openBatch();
      }
    }, 20);
  };
  openBatch();
  return {
    connected: () => connected,
    reconnects: () => reconnects,
    latenciesMs,
    received: () => received,
    close: () => {
      closed = true;
      for (const request of requests) request.destroy();
    },
  };
}

/** The value at `fraction` of a histogram (count per millisecond), as sorted[floor(fraction * n)] of the values. */
export function percentileOf(histogram: number[], fraction: number): number {
  const total = histogram.reduce((sum, count) => sum + count, 0);
  if (total === 0) return Number.NaN;
  const rank = Math.min(total - 1, Math.floor(fraction * total));
  let seen = 0;
  for (const [value, count] of histogram.entries()) {
    seen += count;
    if (seen > rank) return value;
  }
  return histogram.length - 1;
}
