import { openPostgres } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { adminConnection, databaseUrl, dropStaleDatabases, newDatabaseName } from './databases.ts';

/**
 * Builds this run's migrated template database (real PostgreSQL only). Workers are started after
 * global setup, so they inherit its name through the environment.
 */
export default async function globalSetup() {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return;
  await dropStaleDatabases(base);
  const template = newDatabaseName('tpl');
  const admin = adminConnection(base);
  try {
    await admin.raw(`CREATE DATABASE "${template}"`);
  } finally {
    await admin.destroy();
  }
  const database = await openPostgres(databaseUrl(base, template), 1);
  try {
    await migrateToLatest(database.db);
  } finally {
    await database.close();
  }
  process.env.TEST_TEMPLATE_DATABASE = template;
  return async () => {
    const cleanup = adminConnection(base);
    try {
      await cleanup.raw(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`);
    } finally {
      await cleanup.destroy();
    }
  };
}
