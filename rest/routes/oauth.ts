import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/oauth.ts';
import { route } from '../route.ts';
import { assertSameOrigin } from '../same-origin.ts';

/**
 * The consent page's calls (docs/mcp.md "Signing in"): a signed-in person reads what an
 * application's sign-in request asks, and approves or denies it once. The OAuth endpoints
 * themselves (/oauth/*, /.well-known/*) are mcp/oauth.ts's.
 */
export const oauthRoutes = (engine: Engine) => {
  const { publicBaseUrl } = engine.dependencies.config;
  return [
    route({
      method: 'get',
      path: '/api/v1/auth/oauth/requests/:request_id',
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary: 'What an application signing in over MCP asks for (consent page)',
      params: schemas.oauthRequestParams,
      response: schemas.oauthRequestView,
      handler: ({ params, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.oauth.describe(params.request_id);
      },
    }),
    route({
      method: 'post',
      path: '/api/v1/auth/oauth/requests/:request_id/decision',
      tag: 'auth',
      auth: 'human',
      errors: [4040],
      summary: 'Approve or deny an MCP sign-in request, once; answers where the browser goes next',
      params: schemas.oauthRequestParams,
      body: schemas.oauthDecisionBody,
      response: schemas.oauthDecisionView,
      handler: ({ params, body, principal, request }) => {
        assertSameOrigin(request, publicBaseUrl);
        return engine.oauth.decide(principal!, params.request_id, body.decision, body.budget);
      },
    }),
  ];
};
