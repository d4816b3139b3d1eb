import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';

/**
 * PGlite has no lock on its data directory and two processes writing it corrupt it, so the
 * embedded mode takes an exclusive lockfile and refuses to start a second process.
 */
export function acquireLockfile(file: string): () => void {
  try {
    writeLock(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const holder = Number(readFileSync(file, 'utf8').trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new Error(
        `The embedded database at ${file.replace(/\/[^/]+$/, '')} is in use by process ${holder}. ` +
          'Stop that process, or set DATA_DIR to another directory, or use DATABASE_URL.',
      );
    }
    // The previous holder died without cleaning up: the lock is stale and safe to take over.
    unlinkSync(file);
    writeLock(file);
  }
  return () => {
    if (existsSync(file) && readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
  };
}

function writeLock(file: string) {
  const descriptor = openSync(file, 'wx');
  writeSync(descriptor, String(process.pid));
  closeSync(descriptor);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
