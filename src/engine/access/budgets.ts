import type { Rule } from './rules.ts';

/**
 * Who may read and change an agent budget (docs/decisions/identity-and-access.md "Agent budgets"):
 * the person who owns the key, signed in as themselves (a bearer token). Anyone else does not
 * learn that the key exists (4040), the operator's keys have no owner and so no budget, and an
 * agent never changes a budget, not even its own key's (4030): a limit its subject could raise
 * would bound nothing. An agent reads what is left of its own in its answers (GET /api/v1/auth/me,
 * the A2A and MCP purchases).
 */
type BudgetedKey = { owner_user_id: string | null };

export const manageAgentBudget: readonly Rule<BudgetedKey>[] = [
  { says: "the key is one of the caller's own", holds: (caller, key) => key.owner_user_id === caller.user_id, otherwise: 'not_found' },
  {
    says: 'the caller is the person, not an agent',
    holds: (caller) => caller.caller_type === 'human',
    otherwise: { forbidden: "an agent cannot change an agent budget, not even its own key's: the person who owns the key sets it" },
  },
];

/**
 * Who may list the transactions one key made (GET /api/v1/auth/agent-transactions?api_key_id=):
 * the person who owns the key, as for its budget; a revoked key's stay readable.
 */
export const listKeyTransactions: readonly Rule<BudgetedKey>[] = [
  { says: "the key is one of the caller's own", holds: (caller, key) => key.owner_user_id === caller.user_id, otherwise: 'not_found' },
  {
    says: 'the caller is the person, not an agent',
    holds: (caller) => caller.caller_type === 'human',
    otherwise: { forbidden: "an agent cannot list its keys' transactions: the person who owns the key does" },
  },
];
