import type { Request, Response } from 'express';
import { createAuthenticator } from '../rest/authentication.ts';
import { clientAddress } from '../rest/route.ts';
import { requestBaseUrl } from '../src/config.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { accessTokenPrefix, oauthScope } from '../src/engine/identity/index.ts';
import { AppError } from '../src/errors.ts';
import { resourceMetadataUrl } from './oauth.ts';

/**
 * Who is calling /mcp (docs/mcp.md "Signing in"). The MCP authorization specification makes the
 * endpoint an OAuth protected resource, and clients act on its answers:
 *
 * - no credentials: 401 with `WWW-Authenticate: Bearer resource_metadata=...`, the challenge that
 *   starts a client's sign-in;
 * - an access token from sign-in (`mcp_at_...`): the grant's person in the agent space; one that
 *   is invalid, expired or revoked is 401 `invalid_token` with the same pointer, so the client
 *   refreshes or signs in again;
 * - API key headers (automation) or a person's bearer token: checked as REST checks them. Key
 *   headers that are wrong answer 403 (4012), never 401: a 401 would make an OAuth client open a
 *   sign-in the person did not ask for, hiding the real problem ("unknown API key").
 */
export function mcpAuthenticator(engine: Engine) {
  const { config } = engine.dependencies;
  const shared = createAuthenticator(engine, config.ADMIN_TOKEN);
  // The scheme's name is case-insensitive (RFC 9110 section 11.1); the token's prefix is not.
  const tokenPattern = new RegExp(`^[Bb][Ee][Aa][Rr][Ee][Rr] +(${accessTokenPrefix}[A-Za-z0-9_-]{1,100})$`);

  return async (request: Request, response: Response): Promise<Principal> => {
    // The resource is the /mcp of the base URL the request reached (PUBLIC_BASE_URL, or the loopback name used without it).
    const base = requestBaseUrl(config, request.get('host'));
    const pointer = `resource_metadata="${resourceMetadataUrl(base)}"`;
    const authorization = request.get('authorization');
    const keyHeaders = request.get('x-api-key') !== undefined || request.get('x-platform-user-id') !== undefined;
    if (authorization === undefined && !keyHeaders) {
      response.setHeader('WWW-Authenticate', `Bearer ${pointer}, scope="${oauthScope}"`);
      throw new AppError(
        'unauthenticated',
        'credentials required: sign in (OAuth, as MCP clients do given this URL), or send X-Api-Key and X-Platform-User-Id',
      );
    }
    const token = tokenPattern.exec(authorization?.trim() ?? '');
    if (token && !keyHeaders) {
      const principal = await engine.oauth.authenticate(token[1]!, clientAddress(request), base);
      if (principal) return principal;
      response.setHeader('WWW-Authenticate', `Bearer error="invalid_token", error_description="the access token is invalid, expired or revoked", ${pointer}`);
      throw new AppError('unauthenticated', 'the access token is invalid, expired or revoked: refresh it or sign in again');
    }
    try {
      return (await shared(request, 'user'))!;
    } catch (error) {
      if (keyHeaders && authorization === undefined && error instanceof AppError && error.errorName === 'unauthenticated') {
        throw new AppError(
          'credentials_rejected',
          `${error.detail ?? 'the API key headers are not valid'} (X-Api-Key / X-Platform-User-Id; to sign in instead, send no key headers)`,
        );
      }
      if (error instanceof AppError && error.errorName === 'unauthenticated')
        response.setHeader('WWW-Authenticate', `Bearer error="invalid_token", ${pointer}`);
      throw error;
    }
  };
}
