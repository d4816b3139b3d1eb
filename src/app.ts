import { createHash } from 'node:crypto';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import swaggerUi from 'swagger-ui-dist';
import { z } from 'zod';
import { createAuthenticator } from '../rest/authentication.ts';
import { sendError } from '../rest/envelope.ts';
import { methodNotAllowed } from '../rest/method-not-allowed.ts';
import { buildOpenApiDocument } from '../rest/openapi.ts';
import { installRequestIds, requestLogger } from '../rest/request-log.ts';
import { type RouteSpec, handled, mountRoutes, route } from '../rest/route.ts';
import { createRouteLookup } from '../rest/route-lookup.ts';
import { categoryRoutes } from '../rest/routes/categories.ts';
import { healthRoutes } from '../rest/routes/health.ts';
import { skillRoutes } from '../rest/routes/skills.ts';
import { taskRoutes } from '../rest/routes/tasks.ts';
import { capabilityRoutes } from '../rest/routes/capabilities.ts';
import { demandRoutes } from '../rest/routes/demands.ts';
import { matchingRoutes } from '../rest/routes/matching.ts';
import { invokeRoutes } from '../rest/routes/invoke.ts';
import { identityRoutes } from '../rest/routes/identity.ts';
import { deviceAuthorizationRoutes } from '../rest/routes/device-authorization.ts';
import { agentBudgetRoutes } from '../rest/routes/agent-budgets.ts';
import { pricingRoutes } from '../rest/routes/pricing.ts';
import { streamRoutes } from '../rest/routes/streams.ts';
import { webhookRoutes } from '../rest/routes/webhooks.ts';
import { transactionRoutes } from '../rest/routes/transactions.ts';
import { walletRoutes } from '../rest/routes/wallet.ts';
import { publicMarketRoutes } from '../rest/routes/public-market.ts';
import { ownKeyRoutes } from '../rest/routes/own-keys.ts';
import { mcpPath, mcpRoutes, refuse as refuseMcpMessage } from '../mcp/index.ts';
import { consentPage, consoleSite, verificationPage } from '../web/serve.ts';
import { oauthRoutes } from '../rest/routes/oauth.ts';
import { oauthRouter } from '../mcp/oauth.ts';
import { originGuard } from '../rest/origin-guard.ts';
import { rpcPath } from '../rpc/card.ts';
import { refuseExchange } from '../rpc/http.ts';
import { rpcRoutes } from '../rpc/index.ts';
import type { Engine } from './engine/index.ts';
import { AppError, toAppError } from './errors.ts';
import { setHeartbeatInterval } from './events/sse.ts';
import { limits } from './limits.ts';
import { assertSafeJson } from './schemas/json-safety.ts';

/**
 * The composition root of the HTTP surface: mounts rest/ and rpc/ on one express app.
 * It never listens; main.ts and the tests do that.
 */
export function allRoutes(engine: Engine): RouteSpec[] {
  const routes = [
    ...healthRoutes(engine),
    ...categoryRoutes(),
    ...identityRoutes(engine),
    ...deviceAuthorizationRoutes(engine),
    ...agentBudgetRoutes(engine),
    ...oauthRoutes(engine),
    ...matchingRoutes(engine),
    ...demandRoutes(engine),
    ...capabilityRoutes(engine),
    ...skillRoutes(engine),
    ...taskRoutes(engine),
    ...invokeRoutes(engine),
    ...streamRoutes(engine),
    ...webhookRoutes(engine),
    ...transactionRoutes(engine),
    ...walletRoutes(engine),
    ...rpcRoutes(engine),
    ...pricingRoutes(engine),
    ...mcpRoutes(engine),
    ...publicMarketRoutes(engine),
    ...ownKeyRoutes(engine),
  ];
  const document = servedOnce(() => buildOpenApiDocument([...routes, openApiRoute], engine.dependencies.config.publicBaseUrl));
  const openApiRoute = route({
    method: 'get',
    path: '/api/v1/public/openapi.json',
    tag: 'meta',
    auth: 'none',
    rawResponse: { contentType: 'application/json' },
    moreAnswers: { '304': { description: 'Not modified: If-None-Match named the document as it is (its ETag)' } },
    summary: 'This OpenAPI 3.1 document',
    response: z.record(z.string(), z.unknown()),
    handler: async ({ request, response }) => {
      // The document itself is served bare (not enveloped) so that OpenAPI tools can read it.
      const { body, etag } = document();
      response.setHeader('ETag', etag);
      response.setHeader('Cache-Control', 'no-cache');
      if (request.fresh) response.status(304).end();
      else response.type('json').send(body);
      return handled;
    },
  });
  return [...routes, openApiRoute];
}

/**
 * The document depends only on the route table and the configuration, so it is built once per
 * process, on first use: building it takes tens of milliseconds of the one thread, and 100
 * parallel readers used to stall every other request for over a second. The global ETag setting
 * stays off (envelopes carry a timestamp); this document gets its own strong ETag, a hash of
 * its text, so a client can revalidate with If-None-Match and get 304.
 */
function servedOnce(build: () => unknown): () => { body: Buffer; etag: string } {
  let served: { body: Buffer; etag: string } | undefined;
  return () => {
    if (served === undefined) {
      // Kept as bytes, so that serving it does not even encode the text again.
      const body = Buffer.from(JSON.stringify(build()));
      served = { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
    }
    return served;
  };
}

export function createApp(engine: Engine) {
  const { config, log } = engine.dependencies;
  setHeartbeatInterval(config.STREAM_HEARTBEAT_MS);
  const app = express();
  app.disable('x-powered-by');
  // Every envelope carries its own timestamp, so an ETag would change each second anyway; not
  // computing it saves hashing every response body.
  app.set('etag', false);
  app.set('query parser', 'simple');
  // One spelling per route: with loose matching, /transactions/ and /TRANSACTIONS would be the
  // same route under different idempotency scopes.
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  installRequestIds(app, log);
  // Decides request.ip, the key of the per-address rate limits (docs/decisions/limits-and-storage.md "Client address: TRUST_PROXY").
  app.set('trust proxy', config.TRUST_PROXY);
  // Browsers may reach /mcp and JSON-RPC: their Origin and Host are checked first (rest/origin-guard.ts).
  const guard = originGuard(config);
  app.use((request, _response, next) => {
    if (request.path === '/mcp' || request.path === '/api/v1/rpc') guard(request.headers, request.hostname);
    next();
  });
  // The hot routes (GET under /api/ without a body, POST under /api/, JSON-RPC) are found in one lookup and run at
  // once, past the middleware below, which would leave them alone (rest/route-lookup.ts).
  const readsOwnBody = (path: string) => path.startsWith('/api/v1/rpc');
  const jsonBody = express.json({ limit: limits.requestBodyBytesMax, strict: true, type: ['application/json', 'application/*+json'] });
  // MCP answers in its protocol: a tool's arguments are checked when the tool is called, so that
  // text PostgreSQL cannot store is a tool error the model can read, not a failed HTTP exchange.
  const checkBody = (request: Request) => {
    if (request.body !== undefined && request.path !== '/mcp') assertSafeJson(request.body, 'body');
  };
  // The JSON parser and the body checks below as one step, for the POST routes the lookup runs
  // at once (a POST under /api/ passes the OAuth router and the OPTIONS answer untouched).
  const parseBody = (request: Request, response: Response, next: (error?: unknown) => void) =>
    jsonBody(request, response, (error?: unknown) => {
      if (error !== undefined && error !== null) return next(error);
      try {
        checkBody(request);
      } catch (refusal) {
        return next(refusal);
      }
      next();
    });
  const lookup = createRouteLookup({ readsOwnBody, parseBody });
  app.use(lookup.dispatch);
  // MCP sign-in's OAuth endpoints read form bodies and answer CORS preflights in the protocol's
  // own terms (mcp/oauth.ts), so they come before the JSON parser and the OPTIONS guard.
  app.use(oauthRouter(engine));
  // JSON-RPC reads its own body: a parse error there is -32700 with HTTP 200, not the REST 4001.
  app.use((request, response, next) => (readsOwnBody(request.path) ? next() : jsonBody(request, response, next)));
  app.use((request, _response, next) => {
    checkBody(request);
    next();
  });
  const routes = allRoutes(engine);
  const wrongMethod = methodNotAllowed(routes);
  // There is no CORS surface: OPTIONS never reaches the router (which would answer it with a bare
  // Allow list); it gets 405 with Allow on a known path and 4040 elsewhere, in the envelope.
  app.use((request, response, next) => {
    if (request.method !== 'OPTIONS') return next();
    wrongMethod(request, response, (error?: unknown) => next(error ?? new AppError('not_found', 'no such route')));
  });

  const router = express.Router({ caseSensitive: true, strict: true });
  mountRoutes(router, routes, createAuthenticator(engine, config.ADMIN_TOKEN), engine.admission.consume, lookup);
  app.use(router);
  app.use(wrongMethod);

  // Routing is strict about a trailing slash; the reference page answers both spellings.
  for (const docsPath of ['/docs', '/docs/']) app.get(docsPath, (_request, response) => response.type('html').send(docsPage));
  app.use('/docs/assets', express.static(path.resolve(swaggerUi.getAbsoluteFSPath()), { index: false }));
  // The device verification page (docs/decisions/identity-and-access.md "Device authorization"), at verification_url.
  app.use('/device', verificationPage());
  app.use('/oauth/consent', consentPage());
  // The web console (docs/decisions/web-console.md): its page at / and its files under /console/.
  app.use(consoleSite());

  app.use((_request: Request, _response: Response, next: NextFunction) => next(new AppError('not_found', 'no such route')));
  app.use((error: unknown, request: Request, response: Response, _next: NextFunction) => {
    const refusal = fromHttpError(error, (message, cause) => requestLogger(request, log).error(message, { error: cause }));
    // A message to /mcp or JSON-RPC refused before its handler (the Origin guard, the body
    // parser) is answered in its protocol too: a JSON-RPC error response, the envelope in its data.
    if (request.method === 'POST' && request.path === mcpPath) return void refuseMcpMessage(engine, request, response, refusal);
    if (request.method === 'POST' && request.path === rpcPath) return void refuseExchange(response, refusal, null, requestLogger(request, log));
    sendError(response, refusal);
  });
  return app;
}

/**
 * Errors raised by express and body-parser before a route runs carry an HTTP status: a body that
 * is too large is 4130, an unreadable body (bad JSON, bad charset, corrupt compression) is 4001,
 * and any other client error (a malformed percent-encoding in the path) is 4000.
 */
function fromHttpError(error: unknown, log: (message: string, cause: unknown) => void): AppError {
  if (error instanceof AppError) return error;
  const { type, status, code } = (error ?? {}) as { type?: string; status?: number; code?: string };
  if (type === 'entity.too.large') return new AppError('payload_too_large', `request body is over ${limits.requestBodyBytesMax} bytes`);
  const clientError = typeof status === 'number' && status >= 400 && status < 500;
  // zlib's errors (gzip, deflate) are Z_*; brotli's are ERR__ERROR_* (a gzip body sent as br).
  const unreadableBody = type?.startsWith('entity.') || type?.endsWith('.unsupported') || code?.startsWith('Z_') || code?.startsWith('ERR__') || status === 415;
  if (clientError && unreadableBody) {
    return new AppError('invalid_json', 'request body is not readable JSON');
  }
  if (clientError) return new AppError('validation_error', 'the request is malformed', { errors: [{ path: 'request', message: 'malformed request' }] });
  return toAppError(error, log);
}

const docsPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agent Marketplace API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/api/v1/public/openapi.json', dom_id: '#reference', deepLinking: true, tryItOutEnabled: true });</script>
</body></html>`;
