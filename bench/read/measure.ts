import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { createHttpClient } from '../lifecycle/http.ts';

/** One read the benchmark sends: to which server, and how one request of it is made and judged. */
export interface Target {
  name: string;
  /** The bare express target this one is compared with (itself for a baseline). */
  baseline: string;
  server: 'app' | 'express' | 'http';
  send(client: ReturnType<typeof createHttpClient>, transactionId: string): Promise<boolean>;
}

export interface Measurement {
  perSecond: number;
  latencies: number[];
  failed: number;
  /** CPU (user + system) the target's server process spent per request, in microseconds. */
  serverCpuUsPerRequest: number;
  /** CPU the database's backend processes spent per request, in microseconds. */
  databaseCpuUsPerRequest: number;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on every Linux this runs on). */
const ticksPerSecond = 100;

/** User + system CPU of a process so far, in microseconds, from /proc (Linux); NaN elsewhere. */
export function processCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1_000_000;
  } catch {
    return Number.NaN;
  }
}

/**
 * `ids.length` connections (one per id), each sending back to back for `seconds` after one
 * warming request each: requests per second, each latency, and the server's CPU per request.
 */
export async function measure(
  target: Target,
  client: ReturnType<typeof createHttpClient>,
  ids: readonly string[],
  seconds: number,
  serverPid: number,
  databaseCpuUs: () => Promise<number>,
): Promise<Measurement> {
  await Promise.all(ids.map((id) => target.send(client, id))); // warm: connections, prepared statements, caches
  const latencies: number[] = [];
  let failed = 0;
  const databaseBefore = await databaseCpuUs();
  const cpuBefore = processCpuUs(serverPid);
  const startedAt = performance.now();
  const endAt = startedAt + seconds * 1000;
  await Promise.all(
    ids.map(async (id) => {
      while (performance.now() < endAt) {
        const sentAt = performance.now();
        if (!(await target.send(client, id))) failed += 1;
        latencies.push(performance.now() - sentAt);
      }
    }),
  );
  const elapsedS = (performance.now() - startedAt) / 1000;
  const cpuUs = processCpuUs(serverPid) - cpuBefore;
  const databaseUs = (await databaseCpuUs()) - databaseBefore;
  const count = Math.max(1, latencies.length);
  return { perSecond: latencies.length / elapsedS, latencies, failed, serverCpuUsPerRequest: cpuUs / count, databaseCpuUsPerRequest: databaseUs / count };
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
export const percentile = (values: number[], share: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(values.length * share) - 1)]!;

/**
 * CPU of the database's backends so far (every connection to it but `client`'s own), in
 * microseconds: PostgreSQL runs on this machine, one process per connection, and the servers'
 * pools keep theirs open, so the difference over a measurement is what its statements cost.
 */
export function databaseCpu(client: pg.Client): () => Promise<number> {
  return async () => {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    return rows.reduce((sum, { pid }) => sum + (processCpuUs(pid) || 0), 0);
  };
}
