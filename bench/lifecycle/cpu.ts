import { type ChildProcess, fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * CPU time of the processes that work for the benchmark, read from /proc while a phase runs:
 * children of the bench server's postmaster that are backends of the bench database (matched on
 * their process title, `postgres: … <user> <database> …`) or its WAL writer, checkpointer and
 * background writer; and redis-server. Backends of other databases (other jobs sharing this
 * PostgreSQL) and other PostgreSQL servers on the host are left out. Processes are sampled every 250 ms and the last value seen is kept, so a
 * backend that exits during the phase (pgbench's) loses at most its last 250 ms. Linux only;
 * elsewhere every figure is NaN.
 *
 * The sampling runs in a child process of its own (cpu-sampler.ts), never in the bench's process:
 * the bench's process is the server, and one pass over /proc reads about a hundred files
 * synchronously (2-5 ms on a loaded 2-core machine). Four passes a second on the server's event
 * loop stalled the requests in flight and counted the stall as server CPU, a burden pgbench's run
 * never carried.
 */
const ticksPerSecond = 100; // USER_HZ, 100 on every mainstream Linux build
const sharedPostgresProcesses = ['walwriter', 'checkpointer', 'background writer'];

export type CpuByProcess = Record<'postgres' | 'redis', number>;

function readTicks(pid: string): { comm: string; ppid: number; ticks: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    // Fields after the comm start at field 3 (state); utime is field 14, stime 15.
    const fields = stat.slice(close + 2).split(' ');
    return { comm, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined; // exited meanwhile
  }
}

function kindOf(pid: string, read: { comm: string; ppid: number }, database: string, postmasterPid: number): keyof CpuByProcess | undefined {
  if (read.comm.startsWith('redis-server')) return 'redis';
  // Only children of the bench server's postmaster: another PostgreSQL on the host is not ours.
  if (read.comm !== 'postgres' || read.ppid !== postmasterPid) return undefined;
  let title: string;
  try {
    title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return undefined;
  }
  const words = title.split(/\s+/);
  if (words.includes(database) || sharedPostgresProcesses.some((name) => title.includes(`: ${name}`))) return 'postgres';
  return undefined;
}

export interface CpuTrackerHere {
  /** Stops sampling and returns CPU milliseconds used since the tracker started. */
  stop(): CpuByProcess;
}

/** The sampling itself, in the calling process: cpu-sampler.ts runs it; the bench calls trackCpu. */
export function trackCpuHere(database: string, postmasterPid: number, intervalMs = 250): CpuTrackerHere {
  const baseline = new Map<string, number>();
  const last = new Map<string, { kind: keyof CpuByProcess; ticks: number }>();
  let first = true;
  const sample = () => {
    let pids: string[];
    try {
      pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
    } catch {
      return;
    }
    for (const pid of pids) {
      const known = last.get(pid);
      const read = readTicks(pid);
      if (!read) continue;
      const kind = known?.kind ?? kindOf(pid, read, database, postmasterPid);
      if (!kind) continue;
      // A process already running at the start counts from there; a later one from zero.
      if (!baseline.has(pid)) baseline.set(pid, first ? read.ticks : 0);
      last.set(pid, { kind, ticks: read.ticks });
    }
    first = false;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      sample();
      const totals: CpuByProcess = { postgres: 0, redis: 0 };
      for (const [pid, { kind, ticks }] of last) totals[kind] += ((ticks - (baseline.get(pid) ?? 0)) * 1000) / ticksPerSecond;
      return totals;
    },
  };
}

export interface CpuTracker {
  /** Stops sampling and resolves to the CPU milliseconds used since the tracker started. */
  stop(): Promise<CpuByProcess>;
}

export type SamplerRequest = { type: 'start'; id: number; database: string; postmasterPid: number } | { type: 'stop'; id: number };
type SamplerReply = { type: 'ready' } | { type: 'started' | 'stopped'; id: number; totals?: CpuByProcess };

let sampler: Promise<{ child: ChildProcess; ask(message: SamplerRequest): Promise<SamplerReply> }> | null = null;

/** The sampler child, started on first use and kept for the bench's life (closeCpuSampler ends it). */
function samplerProcess() {
  sampler ??= new Promise((resolve, reject) => {
    const samplerPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cpu-sampler.ts');
    const child = fork(samplerPath, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const waiting = new Map<number, { answer(reply: SamplerReply): void; fail(error: Error): void }>();
    let exited: Error | null = null;
    child.on('message', (reply: SamplerReply) => {
      if (reply.type === 'ready') return resolve({ child, ask });
      waiting.get(reply.id)?.answer(reply);
      waiting.delete(reply.id);
    });
    // A sampler that dies fails whoever waits on it instead of leaving the bench hanging.
    child.once('exit', (code) => {
      exited = new Error(`CPU sampler exited (code ${code})`);
      reject(exited);
      for (const waiter of waiting.values()) waiter.fail(exited);
      waiting.clear();
    });
    function ask(message: SamplerRequest) {
      return new Promise<SamplerReply>((answer, fail) => {
        if (exited) return fail(exited);
        waiting.set(message.id, { answer, fail });
        child.send(message);
      });
    }
  });
  return sampler;
}

let nextTrackerId = 1;

/**
 * Starts counting the CPU of the bench database's PostgreSQL processes and of Redis, in the
 * sampler child; resolves once its first pass (the baseline) is taken.
 */
export async function trackCpu(database: string, postmasterPid: number): Promise<CpuTracker> {
  const { ask } = await samplerProcess();
  const id = nextTrackerId++;
  await ask({ type: 'start', id, database, postmasterPid });
  return {
    async stop() {
      const reply = await ask({ type: 'stop', id });
      return reply.type === 'stopped' && reply.totals ? reply.totals : { postgres: Number.NaN, redis: Number.NaN };
    },
  };
}

/** Ends the sampler child, if one was started and still runs. */
export async function closeCpuSampler(): Promise<void> {
  const started = sampler;
  sampler = null;
  const child = await started?.then(
    (running) => running.child,
    () => null,
  );
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.disconnect();
  await gone;
}

/** The postmaster of the server at `pid`'s parent: the backend serving a connection is its child. */
export function parentPid(pid: number): number {
  return readTicks(String(pid))?.ppid ?? Number.NaN;
}

/** CPU ms of this process's reaped children (pgbench, once execFile has returned). */
export function reapedChildrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / ticksPerSecond; // cutime, cstime
  } catch {
    return Number.NaN;
  }
}

/** Machine-wide CPU time from /proc/stat: busy (all non-idle states) and total, in ms. */
export interface SystemCpu {
  busyMs: number;
  totalMs: number;
}

export function sampleSystemCpu(): SystemCpu {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    // cpu user nice system idle iowait irq softirq steal guest guest_nice
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
    const busy = user! + nice! + system! + irq! + softirq! + steal!;
    return { busyMs: (busy * 1000) / ticksPerSecond, totalMs: ((busy + idle! + iowait!) * 1000) / ticksPerSecond };
  } catch {
    return { busyMs: Number.NaN, totalMs: Number.NaN };
  }
}

/** Cores kept busy between two samples, over `elapsedMs` of wall time. */
export function busyCores(before: SystemCpu, after: SystemCpu, elapsedMs: number): number {
  return (after.busyMs - before.busyMs) / elapsedMs;
}

/** Samples the machine for `ms` and returns how many cores were busy: a check for foreign load. */
export async function measureIdleLoad(ms = 2_000): Promise<number> {
  const before = sampleSystemCpu();
  const at = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return busyCores(before, sampleSystemCpu(), performance.now() - at);
}
