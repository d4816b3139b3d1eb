import { z } from 'zod';
import { agentBudgetBody } from './agent-budgets.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';

/** The consent page's two calls (docs/mcp.md "Signing in"). */
export const oauthRequestParams = z.object({ request_id: uuid });

export const oauthRequestView = z
  .object({
    id: uuid,
    client_id: z.string().meta({ description: 'The application: a registered id, or the https URL of its client metadata document' }),
    client_name: z.string().nullable().meta({ description: 'The name the application gives itself (unverified)' }),
    client_uri: z.string().nullable(),
    client_host: z.string().nullable().meta({
      description: 'The host serving the client metadata document the client_id names: the one part someone answers for; null for a client registered here',
    }),
    redirect_uri: z.string().meta({ description: 'Where the browser goes after the decision, whole' }),
    redirect_origin: z.string().meta({ description: 'The origin (or app scheme) of redirect_uri' }),
    scope: z.string(),
    resource: z.string().meta({ description: "What the token will be good for: this server's MCP endpoint" }),
    expires_at: dateTime,
  })
  .meta({ id: 'OAuthRequest' });

export const oauthDecisionBody = z
  .strictObject({
    decision: z.enum(['approve', 'deny']),
    budget: agentBudgetBody.optional().meta({ description: "With approve: the agent budget the grant's key starts with (the person can change it later)" }),
  })
  .meta({ id: 'OAuthDecision' });

export const oauthDecisionView = z
  .object({
    status: z.enum(['approved', 'denied']),
    redirect_to: z.string().meta({ description: 'Where the page sends the browser: the application, with the code or the refusal' }),
  })
  .meta({ id: 'OAuthDecisionOutcome' });

/**
 * The authorization request's own parameters (RFC 6749 section 4.1.1, RFC 7636, RFC 8707), read
 * once client_id and redirect_uri are known good; each is bounded, since a sign-in request is
 * stored for anyone who asks (issue 28 point 9). Refusals go back to the client as invalid_request.
 */
export const authorizationParams = z.object({
  response_type: z.literal('code', 'response_type must be "code"'),
  code_challenge: z
    .string()
    .length(limits.oauthCodeChallengeLength)
    .regex(/^[A-Za-z0-9_-]+$/, 'code_challenge must be base64url'),
  code_challenge_method: z.literal('S256', 'code_challenge_method must be S256'),
  scope: z.string().max(limits.oauthScopeLengthMax).optional(),
  state: z.string().max(limits.oauthStateLengthMax).optional(),
  resource: z.url().max(limits.oauthUriLengthMax).optional(),
});
