import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/device-authorization.ts';
import { clientAddress, route } from '../route.ts';
import { assertSameOrigin } from '../same-origin.ts';

/**
 * Device authorization (docs/decisions/identity-and-access.md "Device authorization"): the client's start and poll
 * (no credentials), the verification page's lookup and confirmation, and the person's own keys
 * (human callers only; the page's calls also pass the same-origin guard).
 */
export const deviceAuthorizationRoutes = (engine: Engine) => {
  const { publicBaseUrl } = engine.dependencies.config;
  return [
    route({
      method: 'post',
      path: '/api/v1/auth/device-auth',
      tag: 'auth',
      auth: 'none',
      successStatus: 201,
      rateLimits: ['requestsPerAddress', 'deviceAuthorizationsPerAddress'],
      summary: 'Start device authorization: a code for the person to approve, and one to poll with',
      body: schemas.startBody,
      response: schemas.startResponse,
      handler: ({ body }) => engine.deviceAuthorization.start(body),
    }),
    route({
      method: 'post',
      path: '/api/v1/auth/device-auth/poll',
      tag: 'auth',
      auth: 'none',
      errors: [4801, 4802, 4803, 4804],
      summary: 'Poll for the outcome: the API key once, after the person approved',
      body: schemas.pollBody,
      response: schemas.pollResponse,
      handler: ({ body }) => engine.deviceAuthorization.poll(body.device_code),
    }),
    route({
      method: 'post',
      path: '/api/v1/auth/device-auth/lookup',
      tag: 'auth',
      auth: 'human',
      errors: [4040, 4803],
      summary: 'What a user code asks for (verification page)',
      body: schemas.lookupBody,
      response: schemas.requestView,
      handler: ({ body, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.deviceAuthorization.lookup(principal!, body.user_code, clientAddress(request));
      },
    }),
    route({
      method: 'post',
      path: '/api/v1/auth/device-auth/confirm',
      tag: 'auth',
      auth: 'human',
      errors: [4040, 4803],
      summary: 'Approve or deny a device request (verification page)',
      body: schemas.confirmBody,
      response: schemas.requestView,
      handler: ({ body, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.deviceAuthorization.confirm(principal!, body.user_code, body.decision, clientAddress(request), body.budget);
      },
    }),
    route({
      method: 'get',
      path: '/api/v1/auth/api-keys',
      tag: 'auth',
      auth: 'human',
      summary: "The caller's own API keys (issued by their device approvals and MCP sign-ins), newest first, each with its agent budget",
      query: schemas.apiKeyListQuery,
      response: schemas.apiKeyList,
      handler: async ({ query, principal }) => {
        const page = await engine.apiKeys.list(principal!, query.page, query.page_size);
        return { ...page, items: await engine.agentBudgets.withBudgets(page.items) };
      },
    }),
    route({
      method: 'delete',
      path: '/api/v1/auth/api-keys/:id',
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary: "Revoke one of the caller's API keys; it stops working at once on every instance",
      params: schemas.apiKeyParams,
      response: schemas.apiKeyView,
      handler: ({ params, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.apiKeys.revoke(principal!, params.id);
      },
    }),
  ];
};
