import { randomBytes } from 'node:crypto';
import knex from 'knex';

/**
 * With TEST_DATABASE_URL set, tests run on real PostgreSQL: global setup migrates a template
 * database once, and every test file clones its own database from it (fast, fully isolated).
 */
export const templateDatabaseName = 'marketplace_test_template';

export function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

export function adminConnection(base: string) {
  return knex({ client: 'pg', connection: databaseUrl(base, 'postgres'), pool: { min: 0, max: 1 } });
}

export async function cloneTemplate(base: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `marketplace_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = adminConnection(base);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.raw(`CREATE DATABASE "${name}" TEMPLATE "${templateDatabaseName}"`);
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
