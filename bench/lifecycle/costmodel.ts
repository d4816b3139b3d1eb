import { trackCpu } from './cpu.ts';
import type { LoadDriver } from './driver.ts';
import type { Profiler } from './profiler.ts';
import type { Agent } from './setup.ts';
import { round, summarize } from './stats.ts';

/**
 * Three probes at the same concurrency that price the pieces of a request, so the analysis can
 * put a number on each optimization instead of guessing:
 *   GET /healthz          HTTP + express + envelope, no authentication, no database;
 *   GET /api/v1/auth/me   the same plus API-key authentication (whatever it costs today);
 *   GET /api/v1/wallet/   authentication plus one SELECT of the caller's accounts.
 * The round trips each probe makes are counted (pg's query calls in this process), not assumed,
 * so a cache in front of authentication shows up. The difference between the last two prices
 * one simple round trip in server and PostgreSQL CPU.
 */
export interface ProbeCost {
  path: string;
  requests: number;
  requestsPerS: number;
  roundTripsPerRequest: number;
  serverCpuMsPerRequest: number;
  postgresCpuMsPerRequest: number;
  p50Ms: number;
  p99Ms: number;
}

export interface CostModel {
  http: ProbeCost;
  authenticated: ProbeCost;
  oneQuery: ProbeCost;
  /** (wallet − auth/me) per extra round trip; null when the probes did not differ by one. */
  serverCpuMsPerSimpleQuery: number | null;
  postgresCpuMsPerSimpleQuery: number | null;
}

export async function runCostModel(
  driver: LoadDriver,
  profiler: Profiler,
  baseUrl: string,
  database: string,
  postmasterPid: number,
  agent: Agent,
  concurrency: number,
  count: number,
): Promise<CostModel> {
  profiler.countRoundTrips();
  async function probe(path: string, headers: Record<string, string>): Promise<ProbeCost> {
    // A short warm-up so JIT state (and any cache) matches the measured requests.
    await driver.probe({ baseUrl, method: 'GET', path, headers, expected: 200, count: Math.min(200, count), concurrency });
    const tripsBefore = profiler.totalRoundTrips;
    const tracker = await trackCpu(database, postmasterPid);
    const serverBefore = process.cpuUsage();
    const result = await driver.probe({ baseUrl, method: 'GET', path, headers, expected: 200, count, concurrency });
    const server = process.cpuUsage(serverBefore);
    const external = await tracker.stop();
    const trips = profiler.totalRoundTrips - tripsBefore;
    const latency = summarize(result.latencies);
    return {
      path,
      requests: result.requests,
      requestsPerS: round((result.requests * 1000) / result.elapsedMs, 1),
      roundTripsPerRequest: round(trips / result.requests, 2),
      serverCpuMsPerRequest: round((server.user + server.system) / 1000 / result.requests, 3),
      postgresCpuMsPerRequest: round(external.postgres / result.requests, 3),
      p50Ms: round(latency.p50, 2),
      p99Ms: round(latency.p99, 2),
    };
  }
  const http = await probe('/healthz', {});
  const authenticated = await probe('/api/v1/auth/me', agent.headers);
  const oneQuery = await probe('/api/v1/wallet/', agent.headers);
  const extraTrips = oneQuery.roundTripsPerRequest - authenticated.roundTripsPerRequest;
  const perTrip = (value: number) => (extraTrips >= 0.5 ? round(value / extraTrips, 3) : null);
  return {
    http,
    authenticated,
    oneQuery,
    serverCpuMsPerSimpleQuery: perTrip(oneQuery.serverCpuMsPerRequest - authenticated.serverCpuMsPerRequest),
    postgresCpuMsPerSimpleQuery: perTrip(oneQuery.postgresCpuMsPerRequest - authenticated.postgresCpuMsPerRequest),
  };
}
