import { type Metric, commandLine, saveResult } from '../results.ts';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

/**
 * bench/login: what a flood of wrong logins does to everyone else. Each scenario fires
 * `--attempts` wrong logins at once and, while they run, times a real login of another account
 * and GET /healthz; the same requests with no attack are the baseline. The server is the real
 * `src/main.ts` (embedded database), once with the default limits and once with the login limits
 * off, so the table shows the difference the limits make in the same run.
 *
 * All requests come from 127.0.0.1, so the server runs with TRUST_PROXY=1 and each request names
 * its client address in X-Forwarded-For, as a proxy in front would: the attacker's addresses and
 * the real user's are then distinct, as they are on the internet.
 */
const { values } = parseArgs({ options: { attempts: { type: 'string', default: '200' } } });
const attemptCount = Number(values.attempts);
const log = (line: string) => process.stdout.write(`${line}\n`);
const password = 'bench-password-1';

interface Server {
  url: string;
  child: ChildProcess;
  directory: string;
}

async function startServer(environment: Record<string, string>): Promise<Server> {
  const directory = mkdtempSync(path.join(tmpdir(), 'bench-login-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, DATA_DIR: directory, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', TRUST_PROXY: '1', ...environment },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  for (let waited = 0; waited < 60_000; waited += 100) {
    const match = /"message":"listening","url":"(http:\/\/[^"]+)"/.exec(output);
    if (match) return { url: match[1]!, child, directory };
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the server did not start:\n${output}`);
}

async function stopServer(server: Server) {
  await new Promise<void>((resolve) => {
    server.child.once('exit', () => resolve());
    server.child.kill('SIGTERM');
  });
  rmSync(server.directory, { recursive: true, force: true });
}

async function answer(server: Server, path: string, body: unknown, address: string) {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': address },
    body: JSON.stringify(body),
  });
  return { code: ((await response.json()) as { code: number }).code, retryAfterSeconds: Number(response.headers.get('retry-after') ?? 1) };
}
const post = async (server: Server, path: string, body: unknown, address: string) => (await answer(server, path, body, address)).code;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

/** A real client's login: refused with 4290, it waits Retry-After and tries again, as told. */
let realRefusals = 0;
const realLogin = (server: Server, email: string) =>
  timed(async () => {
    for (let attempt = 0; attempt < 60; attempt++) {
      const { code, retryAfterSeconds } = await answer(server, '/api/v1/auth/login', { email, password }, '198.51.100.2');
      if (code === 0) return;
      if (code !== 4290) throw new Error(`the real login was answered ${code}`);
      realRefusals += 1;
      await new Promise((resolve) => setTimeout(resolve, retryAfterSeconds * 1000));
    }
    throw new Error('the real login was refused 60 times');
  });
const health = (server: Server) => timed(() => fetch(`${server.url}/healthz`).then((response) => response.text()));

interface Scenario {
  name: string;
  victim: (index: number) => string;
  address: (index: number) => string;
}

/** Fires the attack; meanwhile one real login and /healthz every 50 ms until the attack is over. */
async function underAttack(server: Server, scenario: Scenario, realEmail: string) {
  const started = performance.now();
  realRefusals = 0;
  let attacking = true;
  const attack = Promise.all(
    Array.from({ length: attemptCount }, (_, index) =>
      post(server, '/api/v1/auth/login', { email: scenario.victim(index), password: 'wrong-password-1' }, scenario.address(index)).catch(() => 'network error'),
    ),
  ).finally(() => (attacking = false));
  await new Promise((resolve) => setTimeout(resolve, 20));
  const login = realLogin(server, realEmail);
  const healthTimes: number[] = [];
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- attacking is cleared by the attack loop when it ends
  while (attacking) {
    healthTimes.push(await health(server));
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const codes = await attack.catch(() => []);
  const counts = codes.reduce<Record<string, number>>((all, code) => ({ ...all, [code]: (all[code] ?? 0) + 1 }), {});
  const loginMs = await login;
  return { attackMs: performance.now() - started, loginMs, refusals: realRefusals, healthMaxMs: Math.max(0, ...healthTimes), counts };
}

const metrics: Metric[] = [];

async function measure(label: string, environment: Record<string, string>, scenarios: Scenario[]) {
  log(`${label}: starting the server`);
  const server = await startServer(environment);
  const rows: string[] = [];
  try {
    const real = `real-${Date.now()}@bench.example`;
    if ((await post(server, '/api/v1/auth/signup', { email: real, password }, '198.51.100.2')) !== 0) throw new Error('signup failed');
    for (const scenario of scenarios) {
      if (scenario.victim(0).startsWith('victim')) await post(server, '/api/v1/auth/signup', { email: scenario.victim(0), password }, '198.51.100.3');
      const baselineLogin = await realLogin(server, real);
      const baselineHealth = await health(server);
      log(
        `${label}, ${scenario.name}: baseline login ${baselineLogin.toFixed(0)} ms, /healthz ${baselineHealth.toFixed(1)} ms; attacking with ${attemptCount} wrong logins`,
      );
      const result = await underAttack(server, scenario, real);
      const answers = Object.entries(result.counts)
        .map(([code, count]) => `${count}x ${code}`)
        .join(', ');
      log(
        `${label}, ${scenario.name}: attack over in ${result.attackMs.toFixed(0)} ms (${answers}); real login ${result.loginMs.toFixed(0)} ms (${result.refusals} refusals first), slowest /healthz ${result.healthMaxMs.toFixed(1)} ms`,
      );
      metrics.push(
        {
          metric: `${label}, ${scenario.name}: real login under attack`,
          value: Math.round(result.loginMs),
          unit: 'ms',
          baseline: { name: 'real login, no attack', value: Math.round(baselineLogin) },
        },
        {
          metric: `${label}, ${scenario.name}: slowest /healthz under attack`,
          value: Number(result.healthMaxMs.toFixed(1)),
          unit: 'ms',
          baseline: { name: '/healthz, no attack', value: Number(baselineHealth.toFixed(1)) },
        },
      );
      rows.push(
        `| ${label} | ${scenario.name} | ${baselineLogin.toFixed(0)} ms | ${result.loginMs.toFixed(0)} ms${result.refusals ? ` (refused ${result.refusals}x, retried after Retry-After)` : ''} | ${baselineHealth.toFixed(1)} ms | ${result.healthMaxMs.toFixed(1)} ms | ${result.attackMs.toFixed(0)} ms | ${answers} |`,
      );
      // Let the pool of scrypt threads drain before the next scenario's baseline.
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await stopServer(server);
  }
  return rows;
}

const stamp = Date.now();
const oneAddressOneAccount: Scenario = { name: 'one address, one account', victim: () => `victim-a-${stamp}@bench.example`, address: () => '203.0.113.1' };
const manyAddressesOneAccount: Scenario = {
  name: `${attemptCount} addresses, one account`,
  victim: () => `victim-b-${stamp}@bench.example`,
  address: (index) => `10.1.${index >> 8}.${index & 255}`,
};
const manyAddressesManyAccounts: Scenario = {
  name: `${attemptCount} addresses, ${attemptCount} accounts`,
  victim: (index) => `nobody-${index}-${stamp}@bench.example`,
  address: (index) => `10.2.${index >> 8}.${index & 255}`,
};

const rows = [
  ...(await measure(
    'login limits off',
    { RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS: 'off', RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT_AND_ADDRESS: 'off', RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: 'off' },
    [oneAddressOneAccount],
  )),
  ...(await measure('default limits', {}, [oneAddressOneAccount, manyAddressesOneAccount, manyAddressesManyAccounts])),
];
log('');
log(
  '| server | attack | real login, no attack | real login, under attack | /healthz, no attack | slowest /healthz under attack | attack lasted | attack answered |',
);
log('|---|---|---|---|---|---|---|---|');
for (const row of rows) log(row);
saveResult({ benchmark: 'login', title: 'Login under attack: `bench/login`', command: commandLine('bench:login'), metrics });
process.exit(0);
