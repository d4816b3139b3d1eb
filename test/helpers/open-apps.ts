import { afterAll } from 'vitest';

/**
 * The test apps started and not yet closed. Test files share a worker process (vitest.config.ts:
 * no isolation on the embedded database), so an app a file forgets to close would keep its timers
 * and database running beside every later file of that worker. Setup (test/helpers/file-setup.ts)
 * closes what a file left open and fails that file, naming the cause.
 */
export const openApps = new Set<{ close(): Promise<void> }>();

export function failOnAppsLeftOpen() {
  afterAll(async () => {
    const left = [...openApps];
    if (left.length === 0) return;
    await Promise.allSettled(left.map((app) => app.close()));
    throw new Error(`${left.length} test app(s) left open at the end of this file: close every app the file starts (afterAll or finally)`);
  });
}
