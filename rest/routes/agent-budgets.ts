import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/agent-budgets.ts';
import { route } from '../route.ts';
import { assertSameOrigin } from '../same-origin.ts';

/**
 * Agent budgets (docs/decisions/money-and-escrow.md "Agent budgets"): the person who owns a key
 * reads, sets and clears what it may spend. Human callers only, like the key list these keys are
 * in: an agent never changes a budget, not even its own (4030); it reads what is left in its
 * answers (GET /api/v1/auth/me, the A2A and MCP purchases). Another person's key, or the
 * operator's, is not found. The console's calls also pass the same-origin guard.
 */
export const agentBudgetRoutes = (engine: Engine) => {
  const { publicBaseUrl } = engine.dependencies.config;
  const path = '/api/v1/auth/api-keys/:id/budget';
  return [
    route({
      method: 'get',
      path,
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary: "One of the caller's keys' agent budget, with what it was charged today and what is left (budget null: none)",
      params: schemas.agentBudgetParams,
      response: schemas.agentBudgetOfKey,
      handler: ({ params, principal }) => engine.agentBudgets.get(principal!, params.id),
    }),
    route({
      method: 'put',
      path,
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary:
        "Set (replace) the agent budget of one of the caller's keys: at most per_purchase_max per charge and daily_max per UTC day, optionally only some categories or capabilities",
      params: schemas.agentBudgetParams,
      body: schemas.agentBudgetBody,
      response: schemas.agentBudgetView,
      handler: ({ params, body, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.agentBudgets.set(principal!, params.id, body);
      },
    }),
    route({
      method: 'delete',
      path,
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary: "Clear the agent budget of one of the caller's keys: it spends without a bound again",
      params: schemas.agentBudgetParams,
      response: schemas.agentBudgetOfKey,
      handler: ({ params, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.agentBudgets.clear(principal!, params.id);
      },
    }),
  ];
};
