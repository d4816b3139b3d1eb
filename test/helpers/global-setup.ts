import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openPostgres } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { chromiumToLaunch } from './browser.ts';
import { adminConnection, databaseUrl, dropRunDatabases, dropStaleDatabases, newDatabaseName } from './databases.ts';
import { buildPgliteTemplate } from './pglite-template.ts';

/**
 * Prepares what every test file of this run shares, and removes it at the end: a temporary root
 * directory (test/helpers/temporary.ts) and the migrated template every test app starts from: a
 * template database on real PostgreSQL, a dump of a migrated PGlite (in the temporary root) on the
 * embedded database. Workers are started after global setup, so they inherit the names through
 * the environment.
 */
export default async function globalSetup() {
  // Without a system Chromium the packaged build is unpacked into the temporary directory on first
  // use, and the package takes the file's existence for a finished unpacking: a second worker
  // starting a browser while the first still writes it launched half a binary (a fresh machine's
  // first `npm test` failed so). Unpacked here, once, before any worker starts.
  await chromiumToLaunch();
  const temporaryRoot = mkdtempSync(path.join(tmpdir(), 'marketplace-test-'));
  process.env.TEST_TEMPORARY_ROOT = temporaryRoot;
  const removeTemporaryRoot = () => rmSync(temporaryRoot, { recursive: true, force: true });
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    try {
      await buildPgliteTemplate(temporaryRoot);
    } catch (error) {
      removeTemporaryRoot();
      throw error;
    }
    return removeTemporaryRoot;
  }
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
    removeTemporaryRoot();
    // The clones first (a test file that failed before closing its app leaves its clone), then
    // the template they were made from.
    await dropRunDatabases(base, template);
  };
}
