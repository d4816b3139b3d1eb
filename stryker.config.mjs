/**
 * Mutation testing (issue 16, point 8): `npm run mutate`. Each mutant of the code that decides
 * money, access and idempotency must make a test fail; the score is in the run's report and
 * docs/decisions.md "Mutation testing". Not part of CI: it takes far longer than CI's budget.
 */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: ['src/domain/**/*.ts', 'src/engine/access/**/*.ts', 'src/store/claims.ts', 'src/callbacks/addresses.ts', 'rest/access-matrix.ts'],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.bench-out/mutation/index.html' },
  jsonReporter: { fileName: '.bench-out/mutation/report.json' },
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['.bench-out', 'data', '.ci/.node', '.scratch'],
};
