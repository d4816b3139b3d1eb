import { z } from 'zod';
import { dateTime, uuid } from './common.ts';

/** The consent page's two calls (docs/mcp.md "Signing in"). */
export const oauthRequestParams = z.object({ request_id: uuid });

export const oauthRequestView = z
  .object({
    id: uuid,
    client_id: z.string().meta({ description: 'The application: a registered id, or the https URL of its client metadata document' }),
    client_name: z.string().nullable().meta({ description: 'The name the application gives itself (unverified)' }),
    client_uri: z.string().nullable(),
    redirect_origin: z.string().meta({ description: 'Where the browser goes after the decision' }),
    scope: z.string(),
    resource: z.string().meta({ description: 'What the token will be good for: this server\'s MCP endpoint' }),
    expires_at: dateTime,
  })
  .meta({ id: 'OAuthRequest' });

export const oauthDecisionBody = z.strictObject({ decision: z.enum(['approve', 'deny']) }).meta({ id: 'OAuthDecision' });

export const oauthDecisionView = z
  .object({ status: z.enum(['approved', 'denied']), redirect_to: z.string().meta({ description: 'Where the page sends the browser: the application, with the code or the refusal' }) })
  .meta({ id: 'OAuthDecisionOutcome' });
