import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.ts';
import { openRuntime } from '../../src/bootstrap.ts';
import { commands } from '../../src/cli/commands/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { testAdminToken, testJwtSecret } from '../helpers/app.ts';
import { adminConnection, cloneTemplate, databaseUrl, newDatabaseName } from '../helpers/databases.ts';
import { temporaryDirectory } from '../helpers/temporary.ts';

/**
 * The CLI is tested as operators use it: as a child process against a real database. With
 * TEST_DATABASE_URL the children share a fresh clone of the PostgreSQL template; otherwise they
 * share an embedded PGlite directory, which only one process may hold at a time, so the CLI runs
 * and the in-process app that checks their effect never overlap.
 */
const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

let backendEnvironment: Record<string, string> = {};
let cleanup = async () => {};

beforeAll(async () => {
  if (process.env.TEST_DATABASE_URL) {
    const clone = await cloneTemplate(process.env.TEST_DATABASE_URL);
    backendEnvironment = { DATABASE_URL: clone.url };
    cleanup = () => clone.drop();
  } else {
    const directory = temporaryDirectory('marketplace-cli');
    backendEnvironment = { DATA_DIR: directory };
    cleanup = () => rm(directory, { recursive: true, force: true });
  }
});

afterAll(async () => {
  await cleanup();
});

/** The child and the in-process app get the same secrets, so a token minted by one verifies in the other. */
function childEnvironment(): NodeJS.ProcessEnv {
  const { DATABASE_URL: _database, DATA_DIR: _directory, REDIS_URL: _redis, LOG_LEVEL: _level, ...inherited } = process.env;
  return { ...inherited, NODE_ENV: 'test', JWT_SECRET: testJwtSecret, ADMIN_TOKEN: testAdminToken, ...backendEnvironment };
}

function runCli(args: string[], environment: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], {
      cwd: projectRoot,
      env: { ...childEnvironment(), ...environment },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts the HTTP app in this process on the database the CLI children wrote to. */
async function withApp(check: (http: ReturnType<typeof supertest>) => Promise<void>) {
  const config = loadConfig({ NODE_ENV: 'test', JWT_SECRET: testJwtSecret, ADMIN_TOKEN: testAdminToken, LOG_LEVEL: 'silent', ...backendEnvironment });
  const runtime = await openRuntime(config, createLogger('silent'));
  try {
    await check(supertest(createApp(runtime.engine)));
  } finally {
    await runtime.close();
  }
}

const stackFrame = /\n\s+at /;

async function emptyPostgresDatabase(base: string) {
  const name = newDatabaseName('db');
  const admin = adminConnection(base);
  await admin.raw(`CREATE DATABASE "${name}"`);
  await admin.destroy();
  return {
    environment: { DATABASE_URL: databaseUrl(base, name) },
    drop: async () => {
      const cleanupConnection = adminConnection(base);
      await cleanupConnection.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await cleanupConnection.destroy();
    },
  };
}

async function emptyDataDirectory() {
  const directory = temporaryDirectory('marketplace-cli-empty');
  return { environment: { DATA_DIR: directory }, drop: () => rm(directory, { recursive: true, force: true }) };
}

// Every test starts CLI processes (tsx, then the database): on a loaded 2-core machine several
// together pass vitest's default 30 s. The tests are about what the processes print and exit with.
describe('CLI help', { timeout: 120_000 }, () => {
  it('lists every command', async () => {
    const result = await runCli(['--help']);
    expect(result.code).toBe(0);
    for (const command of commands) expect(result.stdout).toContain(command.name);
  });

  // One process per command at once: on a loaded 2-core machine they can take longer than the
  // default 30 s together, and the test is about what they print, not how fast.
  it('documents every option of every command', async () => {
    const results = await Promise.all(commands.map((command) => runCli([command.name, '--help'])));
    results.forEach((result, index) => {
      const command = commands[index]!;
      expect(result.code, command.name).toBe(0);
      expect(result.stderr, command.name).toBe('');
      expect(result.stdout).toContain(`Usage: npm run cli -- ${command.name}`);
      expect(result.stdout).toContain(command.description);
      for (const option of Object.keys(command.options)) expect(result.stdout).toContain(`--${option}`);
      expect(result.stdout).toContain('--help');
    });
  }, 120_000);
});

describe('CLI usage errors', { timeout: 120_000 }, () => {
  it('exit with code 2 and say what is wrong on stderr', async () => {
    const [unknownCommand, noCommand, unknownOption, missingOption, invalidValue] = await Promise.all([
      runCli(['frobnicate']),
      runCli([]),
      runCli(['create-user', '--colour', 'blue']),
      runCli(['link-user', '--user-id', randomUUID()]),
      runCli(['create-api-key', '--platform', 'Not A Platform']),
    ]);
    expect(unknownCommand).toMatchObject({ code: 2, stdout: '' });
    expect(unknownCommand.stderr).toContain('unknown command "frobnicate"');
    expect(noCommand).toMatchObject({ code: 2, stdout: '' });
    expect(noCommand.stderr).toContain('no command given');
    expect(unknownOption).toMatchObject({ code: 2, stdout: '' });
    expect(unknownOption.stderr).toContain("Unknown option '--colour'");
    expect(missingOption).toMatchObject({ code: 2, stdout: '' });
    expect(missingOption.stderr).toContain('missing required option --api-key-id');
    expect(missingOption.stderr).toContain('link-user --help');
    expect(invalidValue).toMatchObject({ code: 2, stdout: '' });
    expect(invalidValue.stderr).toContain('--platform:');
  });
});

describe('CLI against the database', { timeout: 120_000 }, () => {
  const email = `operator-${randomUUID()}@example.com`;
  const password = 'correct-horse-42';
  let userId = '';
  let apiKey = { id: '', api_key: '' };
  let accessToken = '';

  it('migrate applies pending migrations and prints their names', async () => {
    const result = await runCli(['migrate']);
    expect(result.code, result.stderr).toBe(0);
    // The PostgreSQL clone comes from an already migrated template; the PGlite directory is new.
    const expected = process.env.TEST_DATABASE_URL ? [] : expect.arrayContaining(['001_identity']);
    expect(JSON.parse(result.stdout)).toEqual({ applied: expected });
  });

  it('migrate prepares an empty database completely, before any server has run', async () => {
    const empty = process.env.TEST_DATABASE_URL ? await emptyPostgresDatabase(process.env.TEST_DATABASE_URL) : await emptyDataDirectory();
    try {
      const result = await runCli(['migrate'], empty.environment);
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout).applied).toEqual(expect.arrayContaining(['001_identity', '006_system_accounts']));
      // The fee and deposit-counterpart accounts exist without a server ever starting.
      const credit = await runCli(['create-user', '--email', 'fresh@example.com', '--password', password], empty.environment);
      expect(credit.code, credit.stderr).toBe(0);
      const userId = JSON.parse(credit.stdout).user_id;
      const credited = await runCli(['credit', '--user-id', userId, '--currency', 'UT', '--amount', '1.00'], empty.environment);
      expect(credited.code, credited.stderr).toBe(0);
    } finally {
      await empty.drop();
    }
    // Three CLI processes, each opening a new embedded database and migrating it: on a loaded
    // machine this alone has taken over 20 s, so it gets more than the default 30 s.
  }, 90_000);

  it('create-user prints the new user as JSON', async () => {
    const result = await runCli(['create-user', '--email', email.toUpperCase(), '--password', password, '--display-name', 'Operator']);
    expect(result.code, result.stderr).toBe(0);
    const created = JSON.parse(result.stdout);
    expect(created).toEqual({ user_id: expect.any(String), email });
    userId = created.user_id;
  });

  it('create-api-key prints the key once, with a warning on stderr', async () => {
    const result = await runCli(['create-api-key', '--platform', 'custom_mcp', '--name', 'CLI test']);
    expect(result.code, result.stderr).toBe(0);
    apiKey = JSON.parse(result.stdout);
    expect(apiKey).toMatchObject({
      id: expect.any(String),
      api_key: expect.any(String),
      agent_platform_type: 'custom_mcp',
      name: 'CLI test',
      auto_provision: false,
    });
    expect(result.stderr).toContain('will not be shown again');
  });

  it('link-user links the user to the key', async () => {
    const result = await runCli(['link-user', '--api-key-id', apiKey.id, '--user-id', userId]);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ api_key_id: apiKey.id, user_id: userId });
  });

  it('mint-jwt prints an access token with the requested lifetime', async () => {
    const result = await runCli(['mint-jwt', '--user-id', userId, '--expires-in', '600']);
    expect(result.code, result.stderr).toBe(0);
    const token = JSON.parse(result.stdout);
    expect(token).toMatchObject({ user_id: userId, token_type: 'Bearer', expires_in: 600 });
    accessToken = token.access_token;
  });

  it('credit puts money into the wallet as a deposit and refuses a bad amount', async () => {
    const result = await runCli(['credit', '--user-id', userId, '--currency', 'UT', '--amount', '25.50', '--note', 'welcome bonus']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ user_id: userId, currency: 'UT', available: '25.50', frozen: '0.00', total: '25.50' });
    const bad = await runCli(['credit', '--user-id', userId, '--currency', 'UT', '--amount', '1.005']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--amount');
  });

  it('link-user with an unknown user exits 1 with the engine error and no stack trace', async () => {
    const result = await runCli(['link-user', '--api-key-id', apiKey.id, '--user-id', randomUUID()]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^error: user not found \(not_found, code 4040\)$/m);
    expect(result.stderr).not.toMatch(stackFrame);
  });

  it('what the CLI created works against the HTTP API', async () => {
    await withApp(async (http) => {
      const asAgent = await http.get('/api/v1/auth/me').set('X-Api-Key', apiKey.api_key).set('X-Platform-User-Id', userId).expect(200);
      expect(asAgent.body.data).toEqual({ user_id: userId, caller_type: 'agent', agent_platform_type: 'custom_mcp', agent_budget: null });
      const wallet = await http.get('/api/v1/wallet').set('X-Api-Key', apiKey.api_key).set('X-Platform-User-Id', userId).expect(200);
      expect(wallet.body.data.ut).toMatchObject({ available: '25.50' });

      const asHuman = await http.get('/api/v1/auth/me').set('Authorization', `Bearer ${accessToken}`).expect(200);
      expect(asHuman.body.data).toEqual({ user_id: userId, caller_type: 'human', agent_platform_type: null, agent_budget: null });

      // The password given to create-user is the one the account signs in with.
      const login = await http.post('/api/v1/auth/login').send({ email, password }).expect(200);
      expect(login.body.data.user_id).toBe(userId);
    });
  });
});
