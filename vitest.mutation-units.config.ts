import { defineConfig } from 'vitest/config';

/**
 * A mutation run of test files that need no database (stryker.config.mjs with MUTATION_UNITS set,
 * the files named by MUTATION_TESTS): as vitest.mutation.config.ts without the global setup, so a
 * mutant that never ends (a loop the mutant made endless) restarts the runner in seconds instead of
 * building the PGlite template again each time.
 */
export default defineConfig({
  test: {
    include: (process.env.MUTATION_TESTS ?? '').split(','),
    pool: 'forks',
    isolate: false,
    testTimeout: 60_000,
  },
});
