import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The measured servers of bench/fanout as child processes, and their memory. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (line: string) => process.stdout.write(`${line}\n`);

export async function waitUntil(check: () => boolean, what: string, timeoutMs: number, progress?: () => string) {
  const deadline = Date.now() + timeoutMs;
  let lastPrint = 0;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    if (progress && Date.now() - lastPrint > 1000) {
      lastPrint = Date.now();
      log(`  ${what}: ${progress()}`);
    }
    await sleep(50);
  }
}

/**
 * The process and, for a cluster (--workers), its workers: the processes whose memory counts.
 * Only Node children: tsx also starts an esbuild service process, which is not the server.
 */
function processTree(pid: number): number[] {
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const isNode = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) === 'node';
        return isNode && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    });
  return [pid, ...children.map(Number)];
}

export interface Memory {
  /** After a full collection: what the process holds, its garbage's half-empty pages included. */
  rssBytes: number;
  /** After a compacting (last-resort) collection: a floor. */
  compactedRssBytes: number;
  heapBytes: number;
  /** The young generation's resident size at each of those readings (memory-probe.ts). */
  youngBytes: number;
  compactedYoungBytes: number;
}

export interface ServerProcess {
  pid: number;
  url: string;
  stop(): void;
  memory(): Promise<Memory>;
}

/**
 * Starts a measured server with `--expose-gc`, `--no-memory-reducer` and the memory probe
 * (memory-probe.ts), and resolves
 * once its output matched `ready` `readyCount` times (the first match's group 1 is its URL).
 */
export function startProcess(command: string[], environment: Record<string, string>, ready: RegExp, readyCount = 1): Promise<ServerProcess> {
  // Without the memory reducer, V8 does not hand memory back at moments of its own choosing (it
  // dropped a server's RSS by 40 MiB mid-run), so RSS before and after subscribers compares.
  const flags = ['--expose-gc', '--no-memory-reducer', '--import', 'tsx', '--import', './bench/fanout/memory-probe.ts'];
  const child = spawn(process.execPath, [...flags, ...command], {
    env: { ...process.env, ...environment },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  /** Live heap and RSS after a full collection, and RSS after a compacting one, summed over the process tree as each probe reports them. */
  const memory = async (): Promise<Memory> => {
    const seen = output.length;
    const pids = processTree(child.pid!);
    for (const pid of pids) process.kill(pid, 'SIGUSR2');
    for (let attempt = 0; attempt < 100; attempt++) {
      await sleep(50);
      // One report from each process asked, the latest if one answered twice (a late line of an earlier reading).
      const byPid = new Map(
        [...output.slice(seen).matchAll(/memory-probe pid=(\d+) heap=(\d+) rss=(\d+) young=(\d+) compacted_rss=(\d+) compacted_young=(\d+)/g)]
          .filter((report) => pids.includes(Number(report[1])))
          .map((report) => [report[1], report] as const),
      );
      const reports = [...byPid.values()];
      if (reports.length < pids.length) continue;
      const sum = (group: number) => reports.reduce((total, report) => total + Number(report[group]), 0);
      return { heapBytes: sum(2), rssBytes: sum(3), youngBytes: sum(4), compactedRssBytes: sum(5), compactedYoungBytes: sum(6) };
    }
    return { heapBytes: Number.NaN, rssBytes: Number.NaN, youngBytes: Number.NaN, compactedRssBytes: Number.NaN, compactedYoungBytes: Number.NaN };
  };
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const matches = [...output.matchAll(ready)];
      if (matches.length >= readyCount) {
        clearInterval(timer);
        resolve({ pid: child.pid!, url: matches[0]![1]!, stop: () => processTree(child.pid!).forEach((pid) => process.kill(pid, 'SIGKILL')), memory });
      }
      if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(output));
      }
    }, 50);
  });
}
