import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * A fresh directory for a test's files (PGlite data, a spawned server's DATA_DIR, generated
 * secrets). It lives under this run's temporary root, which global setup creates and removes at
 * the end, so a run leaves nothing behind even when a test fails before its own cleanup.
 */
export function temporaryDirectory(prefix: string): string {
  return mkdtempSync(path.join(process.env.TEST_TEMPORARY_ROOT ?? tmpdir(), `${prefix}-`));
}
