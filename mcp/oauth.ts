import { clientRegistrationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/register.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { revocationHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/revoke.js';
import { tokenHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/token.js';
import {
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  TooManyRequestsError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { clientAddress } from '../rest/route.ts';
import { requestBaseUrl } from '../src/config.ts';
import { type RateLimitName, issuerAt, type OAuthEngine, OAuthProblem, oauthScope, resourceAt } from '../src/engine/identity/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { TtlCache } from '../src/engine/common/index.ts';
import { AppError } from '../src/errors.ts';
import { authorizationEndpoint } from './oauth-authorize.ts';

/**
 * MCP sign-in over HTTP (docs/mcp.md "Signing in"): the OAuth 2.1 endpoints of the MCP
 * authorization specification, built from the MCP SDK's own handlers (request parsing, PKCE S256
 * verification, the error responses) around the engine's clients, requests, codes and tokens
 * (src/engine/identity/oauth.ts); the authorization endpoint is this server's own (mcp/oauth-authorize.ts). Mounted before the JSON body parser
 * and the OPTIONS guard: these endpoints read form bodies and answer CORS preflights, as OAuth
 * clients in browsers need.
 */
export const oauthPaths = {
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
  consent: '/oauth/consent',
  protectedResource: '/.well-known/oauth-protected-resource',
  authorizationServer: '/.well-known/oauth-authorization-server',
} as const;

/** The engine's refusals in the protocol's words (RFC 6749 section 5.2, RFC 8707). */
function asOAuthError(error: unknown): unknown {
  if (!(error instanceof OAuthProblem)) return error;
  if (error.code === 'invalid_grant') return new InvalidGrantError(error.message);
  if (error.code === 'invalid_target') return new InvalidTargetError(error.message);
  if (error.code === 'invalid_scope') return new InvalidScopeError(error.message);
  if (error.code === 'temporarily_unavailable') return new TooManyRequestsError(error.message);
  return new InvalidRequestError(error.message);
}

const translated = <T>(work: () => Promise<T>) =>
  work().catch((error: unknown) => {
    throw asOAuthError(error);
  });

export function oauthProvider(oauth: OAuthEngine): OAuthServerProvider {
  return {
    clientsStore: {
      getClient: (clientId) => oauth.clients.find(clientId),
      registerClient: (metadata) =>
        oauth.clients.register(metadata).catch((error: unknown) => {
          throw error instanceof AppError ? new InvalidClientMetadataError(error.message) : error;
        }),
    },
    // The authorization endpoint is mcp/oauth-authorize.ts: the SDK's would redirect to any registered URI.
    authorize: () => Promise.reject(new Error('authorization requests are answered by mcp/oauth-authorize.ts')),
    challengeForAuthorizationCode: (client, code) => translated(() => oauth.challengeFor(client.client_id, code)),
    exchangeAuthorizationCode: (client, code, _verifier, redirectUri, resource) =>
      translated(() => oauth.exchangeCode(client as never, code, redirectUri, resource)),
    exchangeRefreshToken: (client, refreshToken, _scopes, resource) => translated(() => oauth.refresh(client as never, refreshToken, resource)),
    verifyAccessToken: () => Promise.reject(new Error('access tokens are checked by the /mcp route')),
    revokeToken: (client, request) => translated(() => oauth.revoke(client as never, request.token)),
  };
}

/** RFC 9728 protected resource metadata and RFC 8414 authorization server metadata, at the base URL a request reached. */
export function oauthMetadata(base: string) {
  const at = (path: string) => new URL(path, base).href;
  return {
    resource: {
      resource: resourceAt(base),
      authorization_servers: [issuerAt(base)],
      scopes_supported: [oauthScope],
      bearer_methods_supported: ['header'],
      resource_name: 'Agent Marketplace MCP',
      resource_documentation: at('/docs'),
    },
    server: {
      issuer: issuerAt(base),
      authorization_endpoint: at(oauthPaths.authorize),
      token_endpoint: at(oauthPaths.token),
      registration_endpoint: at(oauthPaths.register),
      revocation_endpoint: at(oauthPaths.revoke),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [oauthScope],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
      service_documentation: at('/docs'),
    },
  };
}

/** The RFC 9728 URL a 401 of /mcp points to (the path-suffixed form for the /mcp resource), at the base URL the request reached. */
export const resourceMetadataUrl = (base: string) => new URL(`${oauthPaths.protectedResource}/mcp`, base).href;

/**
 * The per-address request budget of REST guards these endpoints too (the SDK's own in-memory
 * limiter is off: it would count per instance and trust no proxy setting); registration has a
 * bucket of its own besides, since each registration is stored (issue 28 point 9).
 */
function underRequestLimits(engine: Engine, namesFor: (request: Request) => RateLimitName[] = () => ['requestsPerAddress']) {
  return (request: Request, response: Response, next: NextFunction) => {
    engine.admission.consume(namesFor(request), { address: clientAddress(request), principal: null }).then(
      () => next(),
      (error: unknown) => {
        if (!(error instanceof AppError)) return next(error);
        const retryAfter = (error.data as { retry_after_seconds?: number } | undefined)?.retry_after_seconds;
        if (retryAfter !== undefined) response.setHeader('Retry-After', String(retryAfter));
        response.status(429).json(new TooManyRequestsError(error.message).toResponseObject());
      },
    );
  };
}

/**
 * The metadata documents of each base URL the server answers for: PUBLIC_BASE_URL, or, when it is
 * unset, each loopback name a client used (config.ts requestBaseUrl). The Host header is the
 * client's, so the handlers kept are bounded; one not kept is made again.
 */
function metadataHandlers() {
  const kept = new TtlCache<{ resource: RequestHandler; server: RequestHandler }>(60 * 60 * 1000, 16);
  return (base: string) => {
    const found = kept.get(base);
    if (found) return found;
    const metadata = oauthMetadata(base);
    const made = { resource: metadataHandler(metadata.resource), server: metadataHandler(metadata.server) };
    kept.set(base, made);
    return made;
  };
}

export function oauthRouter(engine: Engine): Router {
  const { config } = engine.dependencies;
  const provider = oauthProvider(engine.oauth);
  const metadataAt = metadataHandlers();
  const baseOf = (request: Request) => requestBaseUrl(config, request.get('host'));
  const router = express.Router();
  // These are the OAuth protocol's endpoints, described by the metadata documents they serve (RFC
  // 8414, RFC 9728), not by the OpenAPI document of the API: each is mounted as a plain function,
  // so that the API's route listing (test/api/public-surface.test.ts) sees only the route table.
  const mount = (path: string, ...handlers: RequestHandler[]) =>
    router.use(
      path,
      ...handlers.map(
        (handler): RequestHandler =>
          (request, response, next) =>
            handler(request, response, next),
      ),
    );
  for (const path of [`${oauthPaths.protectedResource}/mcp`, oauthPaths.protectedResource])
    mount(path, (request, response, next) => metadataAt(baseOf(request)).resource(request, response, next));
  mount(oauthPaths.authorizationServer, (request, response, next) => metadataAt(baseOf(request)).server(request, response, next));
  const limited = underRequestLimits(engine);
  mount(oauthPaths.authorize, limited, authorizationEndpoint(engine));
  mount(oauthPaths.token, limited, tokenHandler({ provider, rateLimit: false }));
  mount(
    oauthPaths.register,
    underRequestLimits(engine, (request) => (request.method === 'POST' ? ['requestsPerAddress', 'oauthRegistrationsPerAddress'] : ['requestsPerAddress'])),
    clientRegistrationHandler({ clientsStore: provider.clientsStore, rateLimit: false, clientIdGeneration: false, clientSecretExpirySeconds: 0 }),
  );
  mount(oauthPaths.revoke, limited, revocationHandler({ provider, rateLimit: false }));
  return router;
}
