import { randomBytes } from 'node:crypto';
import knex from 'knex';

/**
 * With TEST_DATABASE_URL set, tests run on real PostgreSQL: global setup migrates a template
 * database for this run, and every test file clones its own database from it (fast, isolated).
 * Names carry their creation time, and a clone's name ends with its run's tag (the template's
 * random part), so a run drops exactly its own databases at the end, concurrent runs never drop
 * each other's, and leftovers of crashed runs are dropped once they are stale.
 */
const prefix = 'mkt_test_';
const staleAfterMs = 3 * 60 * 60 * 1000;

const runTagOf = (template: string | undefined) => /_([0-9a-f]{8})$/.exec(template ?? '')?.[1];

export function newDatabaseName(kind: 'tpl' | 'db'): string {
  const runTag = kind === 'db' ? runTagOf(process.env.TEST_TEMPLATE_DATABASE) : undefined;
  return `${prefix}${kind}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}${runTag ? `_${runTag}` : ''}`;
}

export function isStale(name: string, now = Date.now()): boolean {
  const match = new RegExp(`^${prefix}(?:tpl|db)_([0-9a-z]+)_[0-9a-f]{8}(?:_[0-9a-f]{8})?$`).exec(name);
  return match !== null && now - Number.parseInt(match[1]!, 36) > staleAfterMs;
}

/** Drops the clones made from `template` in this run that are still there, then the template. */
export async function dropRunDatabases(base: string, template: string) {
  const admin = adminConnection(base);
  try {
    const runTag = runTagOf(template)!;
    const rows = await admin.raw(`SELECT datname FROM pg_database WHERE datname LIKE '${prefix}%'`);
    for (const { datname } of rows.rows as { datname: string }[]) {
      if (datname.startsWith(`${prefix}db_`) && datname.endsWith(`_${runTag}`)) await admin.raw(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
    await admin.raw(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
  } finally {
    await admin.destroy();
  }
}

export function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminConnection(base: string) {
  return knex({ client: 'pg', connection: databaseUrl(base, 'postgres'), pool: { min: 0, max: 1 } });
}

export async function dropStaleDatabases(base: string) {
  const admin = adminConnection(base);
  try {
    const rows = await admin.raw(`SELECT datname FROM pg_database WHERE datname LIKE '${prefix}%'`);
    for (const { datname } of rows.rows as { datname: string }[]) {
      if (isStale(datname)) await admin.raw(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    }
  } finally {
    await admin.destroy();
  }
}

export async function cloneTemplate(base: string): Promise<{ url: string; drop(): Promise<void> }> {
  const template = process.env.TEST_TEMPLATE_DATABASE;
  if (!template) throw new Error('TEST_TEMPLATE_DATABASE is not set: run tests through vitest (global setup creates it)');
  const name = newDatabaseName('db');
  const admin = adminConnection(base);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.raw(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        break;
      } catch (error) {
        // Two workers cloning at the same instant can collide on the template; try again.
        if (attempt >= 20 || !/being accessed by other users/.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.destroy();
  }
  return {
    url: databaseUrl(base, name),
    async drop() {
      const cleanup = adminConnection(base);
      try {
        await cleanup.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await cleanup.destroy();
      }
    },
  };
}
