import { mutationGroups } from './test/mutation/groups.mjs';

/**
 * Mutation testing (issue 16, point 8): `npm run mutate` runs every group of
 * test/mutation/groups.mjs in turn (test/mutation/run.mjs); this file is one group's run, the
 * group named by MUTATION_GROUP. Each mutant of the code that decides money, access and
 * idempotency must make one of its group's tests fail; the scores are in docs/decisions.md
 * "Mutation testing". Not part of CI: it takes far longer than CI's budget.
 */
const groupName = process.env.MUTATION_GROUP;
const group = mutationGroups[groupName];
const strykerGroups = Object.keys(mutationGroups).filter((name) => !mutationGroups[name].script);
if (!group || group.script) throw new Error(`MUTATION_GROUP must name one of: ${strykerGroups.join(', ')} (npm run mutate runs them all, and the script groups too)`);

export default {
  testRunner: 'vitest',
  // MUTATION_UNITS: the tests named by MUTATION_TESTS need no database (vitest.mutation-units.config.ts).
  vitest: { configFile: process.env.MUTATION_UNITS ? 'vitest.mutation-units.config.ts' : 'vitest.mutation.config.ts' },
  mutate: group.mutate,
  coverageAnalysis: 'perTest',
  // Static mutants (a change to a module-level table, evaluated once at import) are not tested:
  // this runner does not re-import modules between mutants, so such a mutant stays inactive and
  // "survives" whatever the tests say (shown by hand: money 'none' -> '' in the escrow table fails
  // test/money/escrow-table.test.ts at once, yet Stryker reported it survived). The tables are pinned by
  // their own row-by-row tests instead (docs/decisions.md "Mutation testing").
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `.bench-out/mutation/${groupName}.html` },
  jsonReporter: { fileName: `.bench-out/mutation/${groupName}.json` },
  incrementalFile: `.bench-out/mutation/${groupName}-incremental.json`,
  thresholds: { high: 90, low: 85, break: null },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['.bench-out', 'data', '.ci/.node', '.scratch'],
};
