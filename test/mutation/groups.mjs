/**
 * Mutation testing in groups (docs/decisions/operations-and-testing.md "Mutation testing"): each group names
 * the code it mutates and the tests that answer for that code, so a mutant runs the few test files
 * that are about it instead of every file that happens to pass through it. `npm run mutate` runs
 * every group in turn (test/mutation/run.mjs); `npm run mutate -- escrow` runs one.
 */
export const mutationGroups = {
  escrow: {
    mutate: [
      'src/domain/escrow.ts',
      'src/domain/money.ts',
      'src/domain/pricing.ts',
      'src/domain/usage-windows.ts',
      'src/domain/ids.ts',
      'src/domain/webhooks.ts',
    ],
    tests: [
      'test/money/escrow-table.test.ts',
      'test/money/escrow-model.test.ts',
      'test/money/escrow-rules.test.ts',
      'test/money/money-invariants.test.ts',
      'test/money/domain-units.test.ts',
    ],
  },
  text: {
    mutate: [
      'src/domain/text.ts',
      'src/domain/term-vectors.ts',
      'src/domain/scoring.ts',
      'src/domain/clarity.ts',
      'src/domain/demands.ts',
      'src/domain/pricing-suggestion.ts',
      'src/domain/description-optimizer.ts',
      'src/domain/a2a.ts',
    ],
    tests: [
      'test/market/scoring.test.ts',
      'test/market/clarity.test.ts',
      'test/market/matching.test.ts',
      'test/market/demands.test.ts',
      'test/market/pricing-suggestion.test.ts',
      'test/money/domain-units.test.ts',
      'test/market/text-units.test.ts',
      'test/work/task-ai.test.ts',
      'test/protocol/a2a-units.test.ts',
      'test/protocol/a2a-conversation.test.ts',
      'test/protocol/a2a-protocol.test.ts',
    ],
  },
  market: {
    mutate: [
      'src/domain/skills.ts',
      'src/domain/tasks.ts',
      'src/domain/skill-drafts.ts',
      'src/domain/skill-extraction.ts',
      'src/domain/skill-kinds.ts',
      'src/domain/task-drafts.ts',
      'src/domain/glossary.ts',
      'src/domain/categories.ts',
      'src/domain/device-codes.ts',
    ],
    tests: [
      'test/work/skill-states.test.ts',
      'test/work/task-states.test.ts',
      'test/work/skill-extraction.test.ts',
      'test/work/skill-ai-create.test.ts',
      'test/work/task-ai.test.ts',
      'test/work/skill-hall.test.ts',
      'test/identity/device-authorization.test.ts',
      'test/money/domain-units.test.ts',
      'test/work/extraction-units.test.ts',
    ],
  },
  access: {
    mutate: ['src/engine/access/**/*.ts', 'rest/access-matrix.ts'],
    tests: ['test/access/access-policy.test.ts', 'test/access/access-matrix.test.ts', 'test/access/access-units.test.ts'],
  },
  /**
   * The route table's declarations: Stryker counts them as static (evaluated when the app is built),
   * so test/mutation/declarations.mjs mutates each route's `auth` itself and runs the access matrix.
   */
  declarations: {
    script: 'test/mutation/declarations.mjs',
    mutate: ["every route's declared auth in rest/routes/*.ts, rpc/card.ts and src/app.ts"],
    tests: ['test/access/access-matrix.test.ts'],
  },
  /**
   * The money path (issue 30): the group commit (the batcher and the statement it writes), the
   * escrow moves, buyer ceilings, bounty holds and idempotency, with the tests that answer for them.
   */
  'money-path': {
    mutate: [
      'src/engine/money/batcher.ts',
      'src/engine/money/wait-trials.ts',
      'src/engine/money/transitions.ts',
      'src/engine/money/ceilings.ts',
      'src/engine/money/task-money.ts',
      'src/engine/money/idempotency.ts',
      'src/store/change.ts',
      'src/store/change-purchases.ts',
      'src/store/change-events.ts',
      'src/store/change-columns.ts',
      'src/store/ledger.ts',
      'src/store/change-deadlines.ts',
      'src/engine/money/transaction-sweeps.ts',
      'src/engine/work/task-end.ts',
      'src/engine/work/task-statement.ts',
      'src/engine/work/task-update.ts',
      'src/engine/work/task-expiry.ts',
      'src/engine/work/task-acceptance.ts',
      'src/store/change-acceptances.ts',
    ],
    tests: [
      'test/money/batcher-units.test.ts',
      'test/money/wait-trials.test.ts',
      'test/money/money-path-mutants.test.ts',
      'test/money/money-path-mutants-api.test.ts',
      'test/money/money-path-mutants-2.test.ts',
      'test/money/money-path-mutants-3.test.ts',
      'test/money/money-path-mutants-4.test.ts',
      'test/money/group-commit.test.ts',
      'test/money/idempotency-claims.test.ts',
      'test/money/idempotency-takeover.test.ts',
      'test/money/idempotency.test.ts',
      'test/money/transactions-lifecycle.test.ts',
      'test/money/escrow-rules.test.ts',
      'test/money/price-ceiling.test.ts',
      'test/money/purchase-round-trips.test.ts',
      'test/money/fresh-claims.test.ts',
      'test/money/ledger-integrity.test.ts',
      'test/money/concurrent-writes.test.ts',
      'test/work/tasks.test.ts',
      'test/market/invoke.test.ts',
      'test/money/transaction-deadlines.test.ts',
      'test/money/group-commit-task-ends.test.ts',
      'test/money/group-commit-task-updates.test.ts',
      'test/work/task-expiry-sweeps.test.ts',
      'test/money/group-commit-acceptances.test.ts',
      'test/work/task-accept.test.ts',
    ],
  },
  /**
   * Agent budgets (issue 31): the bounds a person sets on a key, checked in the database
   * transaction of every charge, and the usage and charge rows they are counted on. The race tests
   * (test/money/budgets-concurrency.test.ts) are left out: whether a mutant's race shows depends on timing.
   */
  budgets: {
    mutate: ['src/engine/money/budgets.ts', 'src/engine/money/budget-bounds.ts', 'src/engine/money/budget-settings.ts', 'src/store/agent-budgets.ts'],
    tests: [
      'test/money/budgets-rules.test.ts',
      'test/money/budgets-tasks.test.ts',
      'test/money/budgets-routes.test.ts',
      'test/money/budgets-paths.test.ts',
      'test/money/budgets-mutants.test.ts',
    ],
  },
  claims: {
    mutate: ['src/store/claims.ts', 'src/callbacks/addresses.ts'],
    tests: [
      'test/money/idempotency-claims.test.ts',
      'test/deliveries/callback-addresses.test.ts',
      'test/deliveries/address-units.test.ts',
      'test/market/invoke.test.ts',
    ],
  },
};
