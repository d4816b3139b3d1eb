import type { Engine } from '../../src/engine/index.ts';
import * as keySchemas from '../../src/schemas/device-authorization.ts';
import * as transactionSchemas from '../../src/schemas/transactions.ts';
import { route } from '../route.ts';
import { assertSameOrigin } from '../same-origin.ts';

/**
 * The person's side of their agents, for the web console's My agents page (issue 31): a key made
 * by hand (its secret answered once), and the transactions their agents made in the agent space.
 * People only (a JWT), like the key list beside them; making a key also passes the same-origin guard.
 */
export const ownKeyRoutes = (engine: Engine) => {
  const { publicBaseUrl } = engine.dependencies.config;
  return [
    route({
      method: 'post',
      path: '/api/v1/auth/api-keys',
      tag: 'auth',
      auth: 'human',
      successStatus: 201,
      errors: [4092],
      summary: 'Make an API key that acts for the caller in the agent space; its secret is in this answer only (4092 past the live keys one person keeps)',
      body: keySchemas.createApiKeyBody,
      response: keySchemas.createdApiKey,
      handler: ({ body, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.apiKeys.create(principal!, body.name);
      },
    }),
    route({
      method: 'get',
      path: '/api/v1/auth/agent-transactions',
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary:
        "The caller's transactions in the agent space, made through their keys, newest first, each with the key that made it (api_key_id: one key's only, 4040 for a key not the caller's; role and status filters; page/page_size or cursor)",
      query: transactionSchemas.agentTransactionsQuery,
      response: transactionSchemas.agentTransactionList,
      handler: ({ query, principal }) => engine.transactions.agentTransactions(principal!, query),
    }),
  ];
};
