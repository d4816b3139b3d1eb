import { type ChildProcess, fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LoadRequest, type LoadResult, type ProbeRequest, type ProbeResult, type Progress, runLoad, runProbe } from './load.ts';

/**
 * Runs load phases either in a child process (the default: bench/lifecycle/client.ts under
 * tsx, talking over IPC) or, with --in-process-client, in this process. The child keeps the
 * load generator's CPU and event loop apart from the server's; on two cores both still
 * compete for the same CPUs, which the report accounts for separately.
 */
export interface LoadDriver {
  kind: 'child-process' | 'in-process';
  run(request: LoadRequest, onProgress: (progress: Progress) => void): Promise<LoadResult>;
  probe(request: ProbeRequest): Promise<ProbeResult>;
  close(): Promise<void>;
}

export function inProcessDriver(): LoadDriver {
  return { kind: 'in-process', run: runLoad, probe: runProbe, close: async () => {} };
}

export async function childProcessDriver(): Promise<LoadDriver> {
  const clientPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'client.ts');
  const child: ChildProcess = fork(clientPath, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = new Map<number, { resolve(result: never): void; reject(error: Error): void; onProgress(progress: Progress): void }>();
  let nextId = 1;
  let exited = false;
  await new Promise<void>((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`load client exited before it was ready (code ${code})`));
    child.once('exit', onExit);
    child.once('message', () => {
      child.off('exit', onExit);
      resolve();
    });
  });
  child.on('message', (message: { type: string; id: number; progress?: Progress; result?: unknown; error?: string }) => {
    const waiter = pending.get(message.id);
    if (!waiter) return;
    if (message.type === 'progress') waiter.onProgress(message.progress!);
    if (message.type === 'result') {
      pending.delete(message.id);
      waiter.resolve(message.result as never);
    }
    if (message.type === 'error') {
      pending.delete(message.id);
      waiter.reject(new Error(message.error));
    }
  });
  child.on('exit', (code) => {
    exited = true;
    for (const waiter of pending.values()) waiter.reject(new Error(`load client exited (code ${code})`));
    pending.clear();
  });
  function send<T>(type: 'run' | 'probe', request: unknown, onProgress: (progress: Progress) => void): Promise<T> {
    if (exited) return Promise.reject(new Error('load client has exited'));
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      pending.set(id, { resolve: resolve, reject, onProgress });
      child.send({ type, id, request });
    });
  }
  return {
    kind: 'child-process',
    run: (request, onProgress) => send<LoadResult>('run', request, onProgress),
    probe: (request) => send<ProbeResult>('probe', request, () => {}),
    async close() {
      if (exited) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'exit' });
      const timer = setTimeout(() => child.kill('SIGTERM'), 5_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
