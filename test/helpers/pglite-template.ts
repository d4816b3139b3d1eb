import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knex from 'knex';
import { type DatabaseHandle, openPglite } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { PgliteClient } from '../../src/db/pglite-dialect.ts';

/**
 * The embedded counterpart of the PostgreSQL template database (databases.ts). Starting an
 * in-memory PGlite runs initdb, and then every migration: seconds of CPU per test app. Global
 * setup does that once per run, with every migration registered in src/db/migrate.ts, and dumps
 * the data directory to a file; each test app then starts from that dump (loadDataDir), already
 * migrated, in a fraction of the time. The file lives in the run's temporary root, which global
 * teardown removes.
 */
const templateVariable = 'TEST_PGLITE_TEMPLATE';

/** Builds the migrated template and writes its dump into `directory`; its path is returned. */
export async function buildPgliteTemplate(directory: string): Promise<string> {
  const pglite = new PGlite();
  // The same dialect as openPglite, on a PGlite of our own, whose data directory can be dumped.
  const db = knex({ client: PgliteClient as unknown as typeof knex.Client, connection: { pglite } as never, pool: { min: 1, max: 1 } });
  try {
    try {
      await migrateToLatest(db);
      // PGlite zeroes its shared buffers at every start (160 MB by default: about half a second of
      // CPU); a test database is tiny, so the copies start with 16 MB. postgresql.auto.conf is
      // part of the dump, so the setting travels with it; the template itself is never reopened.
      await db.raw("ALTER SYSTEM SET shared_buffers = '16MB'");
    } finally {
      await db.destroy();
    }
    // Uncompressed: every app start would otherwise decompress 40 MB; the file never leaves the machine.
    const dump = await pglite.dumpDataDir('none');
    const file = path.join(directory, 'pglite-template.tar');
    await writeFile(file, new Uint8Array(await dump.arrayBuffer()));
    process.env[templateVariable] = file;
    return file;
  } finally {
    await pglite.close();
  }
}

/**
 * The dump as PGlite reads it: PGlite asks the Blob for arrayBuffer(), which Node implements by
 * streaming the Blob's 40 MB in small chunks (a third of a second of CPU per app); this Blob hands
 * over a copy of bytes already in memory instead. A copy, because each app gets its own database.
 */
class DumpBlob extends Blob {
  readonly #dump: Uint8Array;

  constructor(dump: Uint8Array) {
    super([], { type: 'application/x-tar' });
    this.#dump = dump;
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    return new Uint8Array(this.#dump).buffer;
  }
}

// Read once per test worker: every app of the worker loads the same bytes.
let templateBytes: Promise<Blob> | undefined;

/**
 * A fresh in-memory PGlite for one test app: from the run's migrated template when global setup
 * made one (`migrated` is then true), otherwise empty, and the app migrates it as production does.
 */
export async function openTestPglite(): Promise<{ database: DatabaseHandle; migrated: boolean }> {
  const file = process.env[templateVariable];
  if (!file) return { database: await openPglite('memory'), migrated: false };
  templateBytes ??= readFile(file).then((bytes) => new DumpBlob(bytes));
  return { database: await openPglite('memory', { loadDataDir: await templateBytes }), migrated: true };
}
