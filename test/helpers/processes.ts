import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** Real processes for tests that need them: a private Redis, and server instances. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RunningProcess {
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

function track(child: ChildProcess): RunningProcess {
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  return {
    child,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A Redis of the test's own, so restarting it cannot disturb other tests. */
export async function startRedis(port: number): Promise<RunningProcess> {
  const redis = track(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'pipe' }));
  await waitFor(() => {
    // A Redis that could not bind its port exits at once; say so instead of waiting out the timeout.
    if (redis.child.exitCode !== null) throw new Error(`redis on port ${port} exited: ${redis.output()}`);
    return redis.output().includes('Ready to accept connections');
  }, `redis on port ${port}`);
  return redis;
}

/**
 * A Redis of the test's own on a port the system had free. Another process may take that port
 * between the asking and Redis binding it; then another port is tried.
 */
export async function startRedisOnFreePort(attempts = 3): Promise<{ redis: RunningProcess; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { redis: await startRedis(port), port };
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

/** Starts `src/main.ts` and resolves with its base URL once it listens. */
export async function startServer(environment: Record<string, string>, startTimeoutMs = 60_000): Promise<RunningProcess & { url: string }> {
  const server = track(
    spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...process.env, ...environment, PORT: '0', HOST: '127.0.0.1' }, stdio: 'pipe' }),
  );
  let url = '';
  try {
    await waitFor(
      () => {
        const match = /"message":"listening",(?:"worker":\d+,)?"url":"(http:\/\/[^"]+)"/.exec(server.output());
        if (match) url = match[1]!;
        if (server.child.exitCode !== null) throw new Error(`server exited: ${server.output()}`);
        return url !== '';
      },
      'the server to listen',
      startTimeoutMs,
    );
  } catch (error) {
    // A server that did not start in time is stopped, not left running after the test (one was
    // found hours later, still holding its data directory and a core's share).
    await server.stop();
    throw error;
  }
  return { ...server, url };
}
