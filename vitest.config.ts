import { defineConfig } from 'vitest/config';

/**
 * The multi-instance test runs two server processes, which the embedded database cannot serve
 * (one process per data directory); it runs whenever real backends are configured, as in CI.
 */
const realBackends = Boolean(process.env.TEST_DATABASE_URL);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: realBackends ? [] : ['test/multi-instance.test.ts'],
    pool: 'forks',
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/file-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
