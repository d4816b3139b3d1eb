import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * The multi-instance test runs two server processes, which the embedded database cannot serve
 * (one process per data directory); it runs whenever real backends are configured, as in CI.
 */
const realBackends = Boolean(process.env.TEST_DATABASE_URL);

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: realBackends ? [] : ['test/chaos/multi-instance.test.ts'],
    pool: 'forks',
    // Without isolation the files of a worker share one process, so the application's modules
    // (and, embedded, PGlite's WebAssembly) are loaded once per worker instead of once per file:
    // about 5 s of CPU per file. The files keep no module state of their own, and
    // test/helpers/file-setup.ts fails a file that leaves an app running. On real backends a whole
    // run without isolation passed (152 files, 2,145 tests, 637 s against about 1,000 s isolated),
    // which keeps CI under its 30 minutes.
    isolate: false,
    // At least two workers, also on a 2-core machine, where vitest's default (the cores less one)
    // is one: with one worker the suite kept only 0.87 of the 2 cores busy (its files wait on
    // timers, sockets and commits more than they compute), and CI took 35 minutes on a slower
    // 2-core machine. The files keep their state apart: a database each, Redis channels and keys
    // under a prefix of their own, ports chosen by the system.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/file-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
