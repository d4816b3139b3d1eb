import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { openPglite } from '../../src/db/database.ts';
import { acquireLockfile } from '../../src/db/lockfile.ts';
import { startServer } from '../helpers/processes.ts';
import { temporaryDirectory } from '../helpers/temporary.ts';

describe('configuration', () => {
  it('fails fast with a message naming each bad variable', () => {
    const attempt = () => loadConfig({ PORT: 'eighty', REDIS_URL: 'not a url', DATA_DIR: temporaryDirectory('cfg') });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/PORT[\s\S]*REDIS_URL/);
  });

  it('generates the JWT secret and admin token once and keeps them in DATA_DIR', () => {
    const directory = temporaryDirectory('cfg');
    const first = loadConfig({ DATA_DIR: directory });
    const second = loadConfig({ DATA_DIR: directory });
    expect(first.ADMIN_TOKEN).toMatch(/^[0-9a-f]{64}$/);
    expect(second.ADMIN_TOKEN).toBe(first.ADMIN_TOKEN);
    expect(second.JWT_SECRET).toBe(first.JWT_SECRET);
    expect(first.embeddedDatabase).toBe(true);
  });

  it('says on first start where it wrote the generated secrets, without printing them', { timeout: 120_000 }, async () => {
    const directory = temporaryDirectory('first-start');
    const environment = { DATA_DIR: directory, LOG_LEVEL: 'info', ADMIN_TOKEN: '', JWT_SECRET: '', DATABASE_URL: '', REDIS_URL: '' };
    const first = await startServer(environment);
    await first.stop();
    const adminToken = readFileSync(path.join(directory, 'admin-token'), 'utf8').trim();
    const jwtSecret = readFileSync(path.join(directory, 'jwt-secret'), 'utf8').trim();
    const line = first
      .output()
      .split('\n')
      .find((text) => text.includes('generated missing secrets'));
    expect(JSON.parse(line!).files).toEqual([path.resolve(directory, 'jwt-secret'), path.resolve(directory, 'admin-token')]);
    expect(first.output()).not.toContain(adminToken);
    expect(first.output()).not.toContain(jwtSecret);
    // Each step of the first start is said as it happens, in order: no silent seconds.
    const steps = first
      .output()
      .split('\n')
      .filter((text) => text.startsWith('{'))
      .map((text) => JSON.parse(text).message as string);
    const order = [
      'generated missing secrets',
      'opening the embedded database',
      'embedded database open',
      'migrating: 001_identity',
      'migrated: 001_identity in',
      'migrations: ',
      'backends ready',
      'listening',
    ];
    const positions = order.map((step) => steps.findIndex((message) => message.startsWith(step)));
    expect(
      positions.every((position) => position >= 0),
      JSON.stringify(steps),
    ).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    const second = await startServer(environment);
    await second.stop();
    expect(second.output()).not.toContain('generated missing secrets');
    expect(second.output()).toContain('migrations: the database is up to date');
  });

  it('refuses more than one worker without PostgreSQL and Redis, which workers share', () => {
    const directory = temporaryDirectory('cfg');
    expect(() => loadConfig({ WORKERS: '2', DATA_DIR: directory })).toThrow(/WORKERS: more than 1 needs DATABASE_URL/);
    expect(() => loadConfig({ WORKERS: '2', DATA_DIR: directory, DATABASE_URL: 'postgres://localhost/x' })).toThrow(ConfigError);
    expect(() => loadConfig({ WORKERS: '0', DATA_DIR: directory })).toThrow(/WORKERS/);
    expect(loadConfig({ WORKERS: '2', DATA_DIR: directory, DATABASE_URL: 'postgres://localhost/x', REDIS_URL: 'redis://localhost' }).WORKERS).toBe(2);
    expect(loadConfig({ DATA_DIR: directory }).WORKERS).toBe(1);
  });

  it('refuses to generate secrets in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: temporaryDirectory('cfg') })).toThrow(/JWT_SECRET, ADMIN_TOKEN/);
  });
});

describe('embedded PGlite', () => {
  it('keeps data across a close and a reopen of the same directory', async () => {
    const directory = temporaryDirectory('pglite');
    const first = await openPglite({ directory });
    await first.db.schema.createTable('kept', (table) => table.bigInteger('amount'));
    await first.db('kept').insert({ amount: '9007199254740993' });
    await first.close();
    const second = await openPglite({ directory });
    try {
      // int8 comes back as an exact string, as with pg, never as a rounded number.
      expect(await second.db('kept').first()).toEqual({ amount: '9007199254740993' });
      expect(await second.db('kept').where({ amount: '9007199254740993' }).update({ amount: '1' })).toBe(1);
      expect(await second.db('kept').del()).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('says once, on one line, why a second server or a CLI command cannot open a data directory in use', { timeout: 120_000 }, async () => {
    const directory = temporaryDirectory('lock-message');
    writeFileSync(path.join(directory, 'pglite.lock'), String(process.pid));
    const environment = {
      ...process.env,
      DATA_DIR: directory,
      DATABASE_URL: '',
      REDIS_URL: '',
      ADMIN_TOKEN: '',
      JWT_SECRET: '',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
    const run = (entry: string, args: string[] = []) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], { env: environment, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (chunk) => (stderr += chunk));
        child.once('close', (code) => resolve({ code, stderr }));
      });
    const sentence = `The embedded database at ${directory} is in use by process ${process.pid}. Stop that process, or set DATA_DIR to another directory, or use DATABASE_URL.`;
    for (const [entry, args, prefix] of [
      ['src/main.ts', [], 'failed to start: '],
      ['src/cli/index.ts', ['migrate'], 'error: '],
    ] as const) {
      const { code, stderr } = await run(entry, [...args]);
      expect(code, stderr).toBe(1);
      expect(stderr.split('in use by process').length - 1, stderr).toBe(1);
      expect(
        stderr.split('\n').filter((line) => line.includes('in use by process')),
        stderr,
      ).toEqual([`${prefix}${sentence}`]);
    }
  });

  it('refuses a second process on the same data directory, and takes over a stale lock', () => {
    const directory = temporaryDirectory('lock');
    const file = path.join(directory, 'pglite.lock');
    writeFileSync(file, String(process.ppid));
    expect(() => acquireLockfile(file)).toThrow(/in use by process/);
    writeFileSync(file, '999999999');
    const release = acquireLockfile(file);
    release();
  });
});
