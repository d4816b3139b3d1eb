/**
 * Mutation testing in groups (docs/decisions/operations-and-testing.md "Mutation testing"): each group names
 * the code it mutates and the tests that answer for that code, so a mutant runs the few test files
 * that are about it instead of every file that happens to pass through it. `npm run mutate` runs
 * every group in turn (test/mutation/run.mjs); `npm run mutate -- escrow` runs one.
 */
export const mutationGroups = {
  escrow: {
    mutate: ['src/domain/escrow.ts', 'src/domain/money.ts', 'src/domain/pricing.ts', 'src/domain/usage-windows.ts', 'src/domain/ids.ts', 'src/domain/webhooks.ts'],
    tests: ['test/escrow-table.test.ts', 'test/escrow-model.test.ts', 'test/escrow-rules.test.ts', 'test/money-invariants.test.ts', 'test/domain-units.test.ts'],
  },
  text: {
    mutate: ['src/domain/text.ts', 'src/domain/term-vectors.ts', 'src/domain/scoring.ts', 'src/domain/clarity.ts', 'src/domain/demands.ts', 'src/domain/pricing-suggestion.ts', 'src/domain/description-optimizer.ts', 'src/domain/a2a.ts'],
    tests: ['test/scoring.test.ts', 'test/clarity.test.ts', 'test/matching.test.ts', 'test/demands.test.ts', 'test/pricing-suggestion.test.ts', 'test/domain-units.test.ts', 'test/text-units.test.ts', 'test/task-ai.test.ts', 'test/a2a-units.test.ts', 'test/a2a-conversation.test.ts', 'test/a2a-protocol.test.ts'],
  },
  market: {
    mutate: ['src/domain/skills.ts', 'src/domain/tasks.ts', 'src/domain/skill-drafts.ts', 'src/domain/skill-extraction.ts', 'src/domain/skill-kinds.ts', 'src/domain/task-drafts.ts', 'src/domain/glossary.ts', 'src/domain/categories.ts', 'src/domain/device-codes.ts'],
    tests: ['test/skill-states.test.ts', 'test/task-states.test.ts', 'test/skill-extraction.test.ts', 'test/skill-ai-create.test.ts', 'test/task-ai.test.ts', 'test/skill-hall.test.ts', 'test/device-authorization.test.ts', 'test/domain-units.test.ts', 'test/extraction-units.test.ts'],
  },
  access: {
    mutate: ['src/engine/access/**/*.ts', 'rest/access-matrix.ts'],
    tests: ['test/access-policy.test.ts', 'test/access-matrix.test.ts', 'test/access-units.test.ts'],
  },
  /**
   * The route table's declarations: Stryker counts them as static (evaluated when the app is built),
   * so test/mutation/declarations.mjs mutates each route's `auth` itself and runs the access matrix.
   */
  declarations: {
    script: 'test/mutation/declarations.mjs',
    mutate: ["every route's declared auth in rest/routes/*.ts, rpc/card.ts and src/app.ts"],
    tests: ['test/access-matrix.test.ts'],
  },
  claims: {
    mutate: ['src/store/claims.ts', 'src/callbacks/addresses.ts'],
    tests: ['test/idempotency-claims.test.ts', 'test/callback-addresses.test.ts', 'test/address-units.test.ts', 'test/invoke.test.ts'],
  },
};
