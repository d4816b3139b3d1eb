import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createHttpClient } from './http.ts';
import type { Pair } from './setup.ts';

/**
 * The load generator: C workers, worker i acting as buyer i and seller i, each running full
 * lifecycles back to back (create with an Idempotency-Key → freeze → accept → deliver →
 * confirm) until N have been started. Every request's latency is recorded per step.
 */
export const steps = ['create', 'freeze', 'accept', 'deliver', 'confirm'] as const;
export type Step = (typeof steps)[number];

export interface LoadRequest {
  baseUrl: string;
  pairs: Pair[];
  lifecycles: number;
  concurrency: number;
}

export interface LoadResult {
  lifecycles: number;
  failed: number;
  errors: string[];
  elapsedMs: number;
  /** Milliseconds per request, by step, and per full lifecycle. */
  latencies: Record<Step | 'lifecycle', number[]>;
  clientCpuMs: number;
}

export interface Progress {
  done: number;
  total: number;
  elapsedMs: number;
}

const resultPayload = { summary: 'Three bullet points about the document.', tokens: 412, items: ['alpha', 'beta', 'gamma'] };

export async function runLoad(request: LoadRequest, onProgress: (progress: Progress) => void): Promise<LoadResult> {
  const { pairs, lifecycles, concurrency } = request;
  if (pairs.length < concurrency) throw new Error(`need ${concurrency} buyer/seller pairs, have ${pairs.length}`);
  const http = createHttpClient(request.baseUrl, concurrency);
  const latencies: LoadResult['latencies'] = { create: [], freeze: [], accept: [], deliver: [], confirm: [], lifecycle: [] };
  const errors: string[] = [];
  let started = 0;
  let done = 0;
  let failed = 0;

  async function timed<T>(step: Step, work: () => Promise<T>): Promise<T> {
    const at = performance.now();
    const result = await work();
    latencies[step].push(performance.now() - at);
    return result;
  }

  async function expectStatus(step: Step, data: { status: string }, status: string) {
    if (data.status !== status) throw new Error(`${step}: expected status ${status}, got ${data.status}`);
  }

  async function lifecycle(pair: Pair) {
    const at = performance.now();
    const created = await timed('create', () =>
      http.call<{ id: string; status: string }>(
        'POST',
        '/api/v1/transactions',
        { ...pair.buyer.headers, 'idempotency-key': randomUUID() },
        { capability_id: pair.capabilityId },
        201,
      ),
    );
    await expectStatus('create', created, 'pending_freeze');
    const path = `/api/v1/transactions/${created.id}`;
    await expectStatus('freeze', await timed('freeze', () => http.call('POST', `${path}/freeze`, pair.buyer.headers, undefined, 200)), 'frozen');
    await expectStatus('accept', await timed('accept', () => http.call('POST', `${path}/accept`, pair.seller.headers, undefined, 200)), 'accepted');
    await expectStatus(
      'deliver',
      await timed('deliver', () => http.call('POST', `${path}/deliver`, pair.seller.headers, { result_payload: resultPayload }, 200)),
      'delivered',
    );
    await expectStatus('confirm', await timed('confirm', () => http.call('POST', `${path}/confirm`, pair.buyer.headers, undefined, 200)), 'settled');
    latencies.lifecycle.push(performance.now() - at);
  }

  async function worker(pair: Pair) {
    while (started < lifecycles) {
      started += 1;
      try {
        await lifecycle(pair);
      } catch (error) {
        failed += 1;
        if (errors.length < 10) errors.push(error instanceof Error ? error.message : String(error));
        // Stop hammering a broken server: a few failures are reported, a stream of them aborts.
        if (failed > Math.max(20, lifecycles / 20)) throw new Error(`too many failed lifecycles (${failed}); first errors:\n${errors.join('\n')}`);
      }
      done += 1;
    }
  }

  const cpuAt = process.cpuUsage();
  const startedAt = performance.now();
  const ticker = setInterval(() => onProgress({ done, total: lifecycles, elapsedMs: performance.now() - startedAt }), 1000);
  try {
    await Promise.all(pairs.slice(0, concurrency).map(worker));
  } finally {
    clearInterval(ticker);
    http.close();
  }
  const elapsedMs = performance.now() - startedAt;
  const cpu = process.cpuUsage(cpuAt);
  onProgress({ done, total: lifecycles, elapsedMs });
  return { lifecycles: done - failed, failed, errors, elapsedMs, latencies, clientCpuMs: (cpu.user + cpu.system) / 1000 };
}

/** A fixed request repeated by C workers: the cost model's probes (no DB, auth only, …). */
export interface ProbeRequest {
  baseUrl: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  expected: number;
  count: number;
  concurrency: number;
}

export interface ProbeResult {
  requests: number;
  elapsedMs: number;
  clientCpuMs: number;
  latencies: number[];
}

export async function runProbe(request: ProbeRequest): Promise<ProbeResult> {
  const http = createHttpClient(request.baseUrl, request.concurrency);
  const latencies: number[] = [];
  let started = 0;
  const cpuAt = process.cpuUsage();
  const startedAt = performance.now();
  async function worker() {
    while (started < request.count) {
      started += 1;
      const at = performance.now();
      await http.call(request.method, request.path, request.headers, undefined, request.expected);
      latencies.push(performance.now() - at);
    }
  }
  try {
    await Promise.all(Array.from({ length: request.concurrency }, worker));
  } finally {
    http.close();
  }
  const cpu = process.cpuUsage(cpuAt);
  return { requests: latencies.length, elapsedMs: performance.now() - startedAt, clientCpuMs: (cpu.user + cpu.system) / 1000, latencies };
}
