import { type ChildProcess, spawn } from 'node:child_process';
import type { ClientTarget } from './sse-clients.ts';

/**
 * N SSE clients spread over several processes (bench/fanout/client-process.ts), subscriber i in
 * process i mod K, so that every change reaches every process alike. The same pool shape measures
 * the bare server and the product. `finish()` closes them and merges their latency histograms.
 */
export interface ClientProcesses {
  /** Opens these connections too (subscriber i of them in process i mod K). */
  open(targets: ClientTarget[]): void;
  connected(): number;
  received(): number;
  reconnects(): number;
  /** Forgets the latencies recorded so far (the warm-up's); resolves when every process has. */
  reset(): Promise<void>;
  finish(): Promise<number[]>;
}

interface Counts {
  connected: number;
  received: number;
  reconnects: number;
}

export function startClientProcesses(processCount: number): ClientProcesses {
  const children: { child: ChildProcess; counts: Counts }[] = [];
  for (let count = 0; count < processCount; count++) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/fanout/client-process.ts'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const entry = { child, counts: { connected: 0, received: 0, reconnects: 0 } };
    child.on('message', (message: Counts & { type: string }) => {
      if (message.type === 'counts') entry.counts = message;
    });
    children.push(entry);
  }
  const sum = (field: keyof Counts) => children.reduce((total, { counts }) => total + counts[field], 0);
  return {
    open: (targets) => {
      for (const [index, { child }] of children.entries()) child.send({ type: 'open', targets: targets.filter((_, at) => at % processCount === index) });
    },
    connected: () => sum('connected'),
    received: () => sum('received'),
    reconnects: () => sum('reconnects'),
    reset: async () => {
      await Promise.all(
        children.map(
          ({ child }) =>
            new Promise<void>((resolve) => {
              const done = (message: { type: string }) => {
                if (message.type !== 'reset') return;
                child.off('message', done);
                resolve();
              };
              child.on('message', done);
              child.send({ type: 'reset' });
            }),
        ),
      );
    },
    finish: async () => {
      const histograms = await Promise.all(
        children.map(
          ({ child }) =>
            new Promise<number[]>((resolve, reject) => {
              child.on('message', (message: { type: string; histogram?: number[] }) => {
                if (message.type === 'finished') resolve(message.histogram!);
              });
              child.once('exit', (code) => reject(new Error(`client process exited with ${code}`)));
              child.send({ type: 'finish' });
            }),
        ),
      );
      const merged: number[] = [];
      for (const histogram of histograms) for (const [value, count] of histogram.entries()) merged[value] = (merged[value] ?? 0) + count;
      return Array.from({ length: merged.length }, (_, value) => merged[value] ?? 0);
    },
  };
}
