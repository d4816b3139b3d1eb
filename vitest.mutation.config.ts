import { defineConfig } from 'vitest/config';
import { mutationGroups } from './test/mutation/groups.mjs';

/**
 * The tests one mutation group runs (stryker.config.mjs, test/mutation/groups.mjs): those that
 * answer for the group's code, so that each mutant costs seconds, not a whole suite. The embedded
 * database serves them, so a run is independent of the PostgreSQL and Redis that CI restarts.
 * test/market/adversarial-text.test.ts is in no group: it asserts that analysers stay linear in time, and
 * Stryker's instrumentation slows every function enough to fail it with no mutant in play.
 */
const group = mutationGroups[process.env.MUTATION_GROUP as keyof typeof mutationGroups];
// eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the variable may name no group at all
if (!group) throw new Error('MUTATION_GROUP must name a group of test/mutation/groups.mjs');

// MUTATION_TESTS (comma-separated files) narrows a run to some of the group's tests, for a run of
// one file with its own unit tests (`MUTATION_TESTS=test/money/batcher-units.test.ts npm run mutate
// -- money-path --mutate src/engine/money/batcher.ts`), when the whole group cannot run in the time there is.
const tests = process.env.MUTATION_TESTS ? process.env.MUTATION_TESTS.split(',') : group.tests;

export default defineConfig({
  test: {
    include: tests,
    pool: 'forks',
    // As in vitest.config.ts on the embedded database: the files of the worker share one module
    // graph, so a mutant's run does not import the application and PGlite's WebAssembly again for
    // every file it runs (Stryker switches mutants at run time, not by importing them).
    isolate: false,
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/file-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { ESCROW_MODEL_RUNS: '15', FUZZ_RUNS: '10' },
  },
});
