import { redirectUriMatches } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { clientAddress } from '../rest/route.ts';
import { requestBaseUrl } from '../src/config.ts';
import type { Engine } from '../src/engine/index.ts';
import { issuerAt, OAuthProblem, type OAuthClient, redirectUriProblem } from '../src/engine/identity/index.ts';
import { limits } from '../src/limits.ts';
import { authorizationParams } from '../src/schemas/oauth.ts';
import { contentSecurityPolicy } from '../web/serve.ts';

/**
 * The authorization endpoint of MCP sign-in (RFC 6749 section 4.1.1; docs/mcp.md "Signing in").
 * The browser is sent back to the client only once both the client and the redirect_uri are
 * known good: an unknown client, a redirect_uri it did not register, or one no longer allowed
 * (issue 28 point 10) gets a page of this server's own, so that no one can use this server to
 * send a person's browser to an address of their choosing. Every other refusal goes back to the
 * client in the protocol's words, with `iss` (RFC 9207).
 */
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);

/** A plain page under the site's CSP (no script), in the look of the sign-in pages. */
function errorPage(response: Response, reason: string, status = 400) {
  response.status(status);
  response.setHeader('Content-Type', 'text/html; charset=utf-8');
  response.setHeader('Content-Security-Policy', contentSecurityPolicy);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('X-Frame-Options', 'DENY');
  response.setHeader('Referrer-Policy', 'no-referrer');
  response.setHeader('Cache-Control', 'no-store');
  response.end(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Sign-in cannot continue · Agent Marketplace</title>
<link rel="stylesheet" href="/device/device.css">
</head>
<body>
<header class="bar"><p class="brand">Agent Marketplace</p></header>
<main>
  <h1>This sign-in cannot continue</h1>
  <section aria-labelledby="reason-title">
    <h2 id="reason-title">What went wrong</h2>
    <p class="form-error" role="alert">${escapeHtml(reason)}</p>
    <p>Nothing was shared and you were not sent anywhere. Close this page and start again from the application; if this keeps happening, tell the application's makers what this page says.</p>
  </section>
</main>
</body>
</html>
`);
}

/** The redirect_uri the browser may go back to, or why there is none (RFC 6749 section 3.1.2.3, RFC 8252 section 7.3 for loopback ports). */
function chosenRedirect(client: OAuthClient, given: unknown): { uri: string } | { problem: string } {
  if (given !== undefined && typeof given !== 'string') return { problem: 'The request names its return address (redirect_uri) more than once.' };
  const uri = given ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0]! : undefined);
  if (uri === undefined)
    return { problem: 'The request does not say where to send you back (redirect_uri), and the application registered several addresses.' };
  if (uri.length > limits.oauthClientUriLengthMax || !client.redirect_uris.some((registered) => redirectUriMatches(uri, registered))) {
    return { problem: 'The application asked to send you back to an address it did not register.' };
  }
  if (redirectUriProblem(uri) !== null) return { problem: 'The application registered a return address of a kind this server no longer sends anyone to.' };
  return { uri };
}

function refusalTo(redirectUri: string, issuer: string, code: string, description: string, state: unknown) {
  const target = new URL(redirectUri);
  target.searchParams.set('error', code);
  target.searchParams.set('error_description', description);
  // A state too long to keep is not echoed either: the refusal stays a short address.
  if (typeof state === 'string' && state.length <= limits.oauthStateLengthMax) target.searchParams.set('state', state);
  target.searchParams.set('iss', issuer);
  return target.href;
}

async function authorize(engine: Engine, request: Request, response: Response) {
  response.setHeader('Cache-Control', 'no-store');
  const params = (request.method === 'POST' ? request.body : request.query) as Record<string, unknown>;
  const clientId = params.client_id;
  const client = typeof clientId === 'string' ? await engine.oauth.clients.find(clientId) : undefined;
  if (!client) return errorPage(response, 'The application that sent you here is not known to this server (its client_id is unknown or could not be read).');
  const redirect = chosenRedirect(client, params.redirect_uri);
  if ('problem' in redirect) return errorPage(response, redirect.problem);

  const base = requestBaseUrl(engine.dependencies.config, request.get('host'));
  const parsed = authorizationParams.safeParse(params);
  if (!parsed.success) {
    const description = parsed.error.issues
      .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
      .join('; ')
      .slice(0, 500);
    return response.redirect(302, refusalTo(redirect.uri, issuerAt(base), 'invalid_request', description, params.state));
  }
  const { scope, state, code_challenge: codeChallenge, resource } = parsed.data;
  try {
    const id = await engine.oauth.startRequest(
      client,
      {
        redirectUri: redirect.uri,
        codeChallenge,
        state,
        scopes: scope === undefined ? [] : scope.split(' '),
        resource: resource ? new URL(resource) : undefined,
      },
      { base, address: clientAddress(request) },
    );
    response.redirect(302, `${new URL('/oauth/consent', base).href}?request=${encodeURIComponent(id)}`);
  } catch (error) {
    if (!(error instanceof OAuthProblem)) throw error;
    response.redirect(302, refusalTo(redirect.uri, issuerAt(base), error.code, error.message, state));
  }
}

export function authorizationEndpoint(engine: Engine): Router {
  const router = express.Router();
  router.use(express.urlencoded({ extended: false, limit: limits.oauthAuthorizationFormBytesMax }));
  router.all('/', (request, response, next) => {
    if (request.method !== 'GET' && request.method !== 'POST') {
      response.setHeader('Allow', 'GET, POST');
      return void response.status(405).json({ error: 'method_not_allowed', error_description: `${request.method} is not allowed here; use GET or POST` });
    }
    authorize(engine, request, response).catch(next);
  });
  // A form that cannot be read (too large, malformed) names no client to send the refusal to.
  router.use((error: { type?: string; status?: number }, _request: Request, response: Response, next: NextFunction) => {
    if (error.type === 'entity.too.large')
      return errorPage(response, `The sign-in request is larger than ${limits.oauthAuthorizationFormBytesMax} bytes.`, 413);
    if (typeof error.status === 'number' && error.status >= 400 && error.status < 500) return errorPage(response, 'The sign-in request could not be read.');
    next(error);
  });
  return router;
}
