import { type ClientTarget, openClients } from './sse-clients.ts';

/**
 * One process of SSE clients (bench/fanout/client-pool.ts starts several, so that reading 10,000
 * streams is not one event loop's serial work): it opens the connections of each `open` message,
 * reports its counts every 200 ms, and on `finish` sends its latencies as a histogram by millisecond.
 */
interface Open {
  type: 'open';
  targets: ClientTarget[];
}

/** The event's own time is its last created_at member: read it without parsing the whole event. */
export const timestampOfEvent = (data: string) => {
  const at = data.lastIndexOf('"created_at":"') + 14;
  return Date.parse(data.slice(at, at + 24));
};

const send = (message: unknown) => process.send?.(message);

const pools: ReturnType<typeof openClients>[] = [];
const total = (count: (pool: ReturnType<typeof openClients>) => number) => pools.reduce((sum, pool) => sum + count(pool), 0);
const counts = () => ({
  type: 'counts',
  connected: total((pool) => pool.connected()),
  received: total((pool) => pool.received()),
  reconnects: total((pool) => pool.reconnects()),
});
const reporter = setInterval(() => send(counts()), 200);

process.on('message', (message: Open | { type: 'finish' } | { type: 'reset' }) => {
  if (message.type === 'open') {
    pools.push(openClients(message.targets.length, (index) => message.targets[index]!, timestampOfEvent));
    return;
  }
  if (message.type === 'reset') {
    // The warm-up's events were received and counted; their latencies are not measured.
    for (const pool of pools) pool.latenciesMs.length = 0;
    send({ type: 'reset' });
    return;
  }
  clearInterval(reporter);
  const histogram: number[] = [];
  for (const pool of pools) {
    pool.close();
    for (const latency of pool.latenciesMs) {
      const at = Math.max(0, Math.round(latency));
      histogram[at] = (histogram[at] ?? 0) + 1;
    }
  }
  send({ ...counts(), type: 'finished', histogram: Array.from({ length: histogram.length }, (_, value) => histogram[value] ?? 0) });
  process.disconnect();
});
