import { defineConfig } from 'vitest/config';

/**
 * The tests mutation testing runs (npm run mutate, stryker.config.mjs): those that exercise the
 * mutated code (src/domain, src/engine/access, src/store/claims.ts, src/callbacks/addresses.ts,
 * the access matrix), with the skill and task tests that reach the newer domain files, so
 * that each mutant costs seconds, not a whole suite.
 * test/adversarial-text.test.ts is left out: it asserts that analysers stay linear in time, and
 * Stryker's instrumentation slows every function enough to fail it with no mutant in play.
 */
export default defineConfig({
  test: {
    include: [
      'test/access-policy.test.ts', 'test/access-matrix.test.ts', 'test/callback-addresses.test.ts', 'test/clarity.test.ts', 'test/escrow-model.test.ts',
      'test/escrow-table.test.ts', 'test/escrow-rules.test.ts', 'test/idempotency-claims.test.ts', 'test/scoring.test.ts',
      'test/money-invariants.test.ts', 'test/matching.test.ts', 'test/demands.test.ts', 'test/device-authorization.test.ts', 'test/wallet.test.ts',
      'test/capabilities-list.test.ts', 'test/invoke.test.ts', 'test/streams.test.ts', 'test/pricing-suggestion.test.ts',
      'test/skill-extraction.test.ts', 'test/skill-states.test.ts', 'test/skill-ratings.test.ts', 'test/skill-hall.test.ts', 'test/skill-ai-create.test.ts',
      'test/skills.test.ts', 'test/task-states.test.ts', 'test/task-applications.test.ts', 'test/task-ai.test.ts', 'test/tasks.test.ts',
    ],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/file-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { ESCROW_MODEL_RUNS: '15', FUZZ_RUNS: '10' },
  },
});
