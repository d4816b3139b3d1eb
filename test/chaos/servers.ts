import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/**
 * The chaos run's server instances (src/main.ts, as `npm start` runs it, on PostgreSQL and
 * Redis) and the faults done to them and to the backends: SIGKILL and restart an instance,
 * restart PostgreSQL, restart Redis.
 */
export const chaosAdminToken = 'chaos-admin-token-0123456789abcdef';

export interface Instance {
  name: string;
  url: string;
  up: boolean;
  kill(): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function instance(name: string, port: number, environment: Record<string, string>): Instance {
  let child: ChildProcess | null = null;
  const self: Instance = {
    name,
    url: `http://127.0.0.1:${port}`,
    up: false,
    kill() {
      child?.kill('SIGKILL');
      child = null;
      self.up = false;
    },
    async start() {
      child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
        env: {
          ...process.env,
          ...environment,
          PORT: String(port),
          HOST: '127.0.0.1',
          ADMIN_TOKEN: chaosAdminToken,
          JWT_SECRET: 'chaos-jwt-secret-0123456789abcdef',
          LOG_LEVEL: 'error',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const started = child;
      started.once('exit', () => {
        if (child === started) self.up = false;
      });
      // Up when it answers /healthz; a start that takes over a minute is a fault of its own.
      for (let attempt = 0; attempt < 600; attempt++) {
        if (child !== started) return;
        const alive = await fetch(`${self.url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
          (response) => response.ok,
          () => false,
        );
        if (alive) {
          self.up = true;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error(`${name} did not start within a minute`);
    },
    async stop() {
      const stopping = child;
      child = null;
      self.up = false;
      if (!stopping) return;
      stopping.kill('SIGTERM');
      await new Promise((resolve) => stopping.once('exit', resolve));
    },
  };
  return self;
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
}

/** Stops PostgreSQL and starts it again (the machine's cluster, as .ci/run starts it). */
export function restartPostgres(downMs: number): Promise<void> {
  const version = readdirSync('/etc/postgresql')[0]!;
  run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'stop', '--', '-m', 'immediate']);
  return new Promise((resolve) =>
    setTimeout(() => {
      run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start']);
      resolve();
    }, downMs),
  );
}

/** Shuts Redis down and starts it again as .ci/run starts it (nothing is kept on disk). */
export function restartRedis(downMs: number): Promise<void> {
  spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'shutdown', 'nosave'], { stdio: 'ignore' });
  return new Promise((resolve) =>
    setTimeout(() => {
      run('redis-server', [
        '--daemonize',
        'yes',
        '--bind',
        '127.0.0.1',
        '-::1',
        '--port',
        '6379',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        '/var/lib/redis',
        '--logfile',
        '/var/log/redis/chaos.log',
      ]);
      resolve();
    }, downMs),
  );
}
