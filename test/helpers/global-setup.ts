import { openPostgres } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { adminConnection, databaseUrl, templateDatabaseName } from './databases.ts';

/** Builds the migrated template database once per test run (real PostgreSQL only). */
export default async function globalSetup() {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return;
  const admin = adminConnection(base);
  try {
    await admin.raw(`DROP DATABASE IF EXISTS "${templateDatabaseName}" WITH (FORCE)`);
    await admin.raw(`CREATE DATABASE "${templateDatabaseName}"`);
    // Databases left behind by an interrupted earlier run are dropped too.
    const stale = await admin.raw(`SELECT datname FROM pg_database WHERE datname LIKE 'marketplace_test_%' AND datname <> ?`, [templateDatabaseName]);
    for (const row of stale.rows as { datname: string }[]) await admin.raw(`DROP DATABASE IF EXISTS "${row.datname}" WITH (FORCE)`);
  } finally {
    await admin.destroy();
  }
  const template = await openPostgres(databaseUrl(base, templateDatabaseName), 1);
  try {
    await migrateToLatest(template.db);
  } finally {
    await template.close();
  }
}
