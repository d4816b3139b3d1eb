import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { authorizationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import {
  InvalidClientMetadataError, InvalidGrantError, InvalidRequestError, InvalidScopeError, InvalidTargetError, TooManyRequestsError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { clientAddress } from '../rest/route.ts';
import type { Engine } from '../src/engine/index.ts';
import { type OAuthEngine, OAuthProblem, oauthScope } from '../src/engine/oauth.ts';
import { AppError } from '../src/errors.ts';

/**
 * MCP sign-in over HTTP (docs/mcp.md "Signing in"): the OAuth 2.1 endpoints of the MCP
 * authorization specification, built from the MCP SDK's own handlers (request parsing,
 * redirect-URI matching, PKCE S256 verification, the error responses) around the engine's
 * clients, requests, codes and tokens (src/engine/oauth.ts). Mounted before the JSON body parser
 * and the OPTIONS guard: these endpoints read form bodies and answer CORS preflights, as OAuth
 * clients in browsers need.
 */
export const oauthPaths = {
  authorize: '/oauth/authorize', token: '/oauth/token', register: '/oauth/register', revoke: '/oauth/revoke', consent: '/oauth/consent',
  protectedResource: '/.well-known/oauth-protected-resource', authorizationServer: '/.well-known/oauth-authorization-server',
} as const;

/** The engine's refusals in the protocol's words (RFC 6749 section 5.2, RFC 8707). */
function asOAuthError(error: unknown): unknown {
  if (!(error instanceof OAuthProblem)) return error;
  if (error.code === 'invalid_grant') return new InvalidGrantError(error.message);
  if (error.code === 'invalid_target') return new InvalidTargetError(error.message);
  if (error.code === 'invalid_scope') return new InvalidScopeError(error.message);
  return new InvalidRequestError(error.message);
}

const translated = <T>(work: () => Promise<T>) => work().catch((error: unknown) => {
  throw asOAuthError(error);
});

export function oauthProvider(oauth: OAuthEngine, consentUrl: string): OAuthServerProvider {
  return {
    clientsStore: {
      getClient: (clientId) => oauth.clients.find(clientId) as Promise<OAuthClientInformationFull | undefined>,
      registerClient: (metadata) => oauth.clients.register(metadata).catch((error: unknown) => {
        throw error instanceof AppError ? new InvalidClientMetadataError(error.message) : error;
      }) as Promise<OAuthClientInformationFull>,
    },
    authorize: async (client, params, response) => {
      const id = await translated(() => oauth.startRequest(client as never, params));
      response.redirect(302, `${consentUrl}?request=${encodeURIComponent(id)}`);
    },
    challengeForAuthorizationCode: (client, code) => translated(() => oauth.challengeFor(client.client_id, code)),
    exchangeAuthorizationCode: (client, code, _verifier, redirectUri, resource) => translated(() => oauth.exchangeCode(client as never, code, redirectUri, resource)),
    exchangeRefreshToken: (client, refreshToken, _scopes, resource) => translated(() => oauth.refresh(client as never, refreshToken, resource)),
    verifyAccessToken: () => Promise.reject(new Error('access tokens are checked by the /mcp route')),
    revokeToken: (client, request) => translated(() => oauth.revoke(client as never, request.token)),
  };
}

/** RFC 9728 protected resource metadata and RFC 8414 authorization server metadata. */
export function oauthMetadata(oauth: OAuthEngine, base: string) {
  const at = (path: string) => new URL(path, base).href;
  return {
    resource: {
      resource: oauth.resource, authorization_servers: [oauth.issuer], scopes_supported: [oauthScope], bearer_methods_supported: ['header'],
      resource_name: 'Agent Marketplace MCP', resource_documentation: at('/docs'),
    },
    server: {
      issuer: oauth.issuer, authorization_endpoint: at(oauthPaths.authorize), token_endpoint: at(oauthPaths.token),
      registration_endpoint: at(oauthPaths.register), revocation_endpoint: at(oauthPaths.revoke),
      response_types_supported: ['code'], response_modes_supported: ['query'], grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'], token_endpoint_auth_methods_supported: ['none'], revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [oauthScope], client_id_metadata_document_supported: true, authorization_response_iss_parameter_supported: true,
      service_documentation: at('/docs'),
    },
  };
}

/** The RFC 9728 URL a 401 of /mcp points to (the path-suffixed form for the /mcp resource). */
export const resourceMetadataUrl = (base: string) => new URL(`${oauthPaths.protectedResource}/mcp`, base).href;

/**
 * The per-address request budget of REST guards these endpoints too (the SDK's own in-memory
 * limiter is off: it would count per instance and trust no proxy setting).
 */
function underRequestLimits(engine: Engine) {
  return (request: Request, response: Response, next: NextFunction) => {
    engine.admission.consume(['requestsPerAddress'], { address: clientAddress(request), principal: null }).then(() => next(), (error: unknown) => {
      if (!(error instanceof AppError)) return next(error);
      const retryAfter = (error.data as { retry_after_seconds?: number } | undefined)?.retry_after_seconds;
      if (retryAfter !== undefined) response.setHeader('Retry-After', String(retryAfter));
      response.status(429).json(new TooManyRequestsError(error.message).toResponseObject());
    });
  };
}

export function oauthRouter(engine: Engine): Router {
  const base = engine.dependencies.config.publicBaseUrl;
  const provider = oauthProvider(engine.oauth, new URL(oauthPaths.consent, base).href);
  const metadata = oauthMetadata(engine.oauth, base);
  const router = express.Router();
  // These are the OAuth protocol's endpoints, described by the metadata documents they serve (RFC
  // 8414, RFC 9728), not by the OpenAPI document of the API: each is mounted as a plain function,
  // so that the API's route listing (test/public-surface.test.ts) sees only the route table.
  const mount = (path: string, ...handlers: RequestHandler[]) => router.use(path, ...handlers.map((handler): RequestHandler => (request, response, next) => handler(request, response, next)));
  for (const path of [`${oauthPaths.protectedResource}/mcp`, oauthPaths.protectedResource]) mount(path, metadataHandler(metadata.resource));
  mount(oauthPaths.authorizationServer, metadataHandler(metadata.server as never));
  const limited = underRequestLimits(engine);
  mount(oauthPaths.authorize, limited, authorizationHandler({ provider, rateLimit: false }));
  mount(oauthPaths.token, limited, tokenHandler({ provider, rateLimit: false }));
  mount(oauthPaths.register, limited, clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false, clientIdGeneration: false, clientSecretExpirySeconds: 0 }));
  mount(oauthPaths.revoke, limited, revocationHandler({ provider, rateLimit: false }));
  return router;
}

