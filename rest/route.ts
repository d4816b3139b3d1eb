import type { NextFunction, Request, Response, Router } from 'express';
import type { z } from 'zod';
import type { RateLimitName, Requester } from '../src/engine/identity/index.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { IdempotencyRequest } from '../src/engine/money/index.ts';
import { idempotencyRequestOf } from './idempotency.ts';
import type { RouteLookup } from './route-lookup.ts';
import { AppError } from '../src/errors.ts';
import { sendData } from './envelope.ts';
import { validationError } from '../src/schemas/validation.ts';
import { assertSafeJson } from '../src/schemas/json-safety.ts';
import { isShadowed, shadowsOf } from './route-paths.ts';
import { nullMeansAbsent, withoutNulls } from '../src/schemas/null-as-absent.ts';

/**
 * A route is declared once, as data: its schemas validate the request, type the handler and
 * generate the OpenAPI document, so the published contract cannot drift from behaviour.
 */
export type AuthRequirement = 'none' | 'user' | 'agent' | 'human' | 'admin';

export interface RouteInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  principal: Principal | null;
  /** The request's idempotency key (header or body), on routes declared `idempotent` only. */
  idempotency: IdempotencyRequest | null;
  request: Request;
  response: Response;
}

export interface RouteSpec<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, P extends z.ZodType = z.ZodType> {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express path syntax (`:id`); OpenAPI gets `{id}`. */
  path: string;
  summary: string;
  tag: string;
  auth: AuthRequirement;
  body?: B;
  query?: Q;
  params?: P;
  response: z.ZodType;
  successStatus?: 200 | 201;
  /** Extra documented failure codes beyond the ones every route of this auth kind can give. */
  errors?: number[];
  /**
   * Set when the success response is not the JSON envelope (an SSE stream, a bare document):
   * OpenAPI then documents `response` under this content type as it is.
   */
  rawResponse?: {
    contentType: string;
    /** Another content type the success may come as, with what it carries (JSON-RPC's streaming methods answer server-sent events). */
    or?: { contentType: string; description: string };
  };
  /**
   * For routes that speak a protocol of their own (JSON-RPC, MCP): the body of a refusal, which is
   * then this schema instead of the REST envelope, for the OpenAPI document.
   */
  failureBody?: z.ZodType;
  /**
   * Answers besides success and the error table's failures, by HTTP status: with no body (a 304, a
   * 204 to JSON-RPC notifications), or `failure` ones a protocol library answers in failureBody's
   * shape (MCP's 406 and 415).
   */
  moreAnswers?: Record<string, { description: string; failure?: true }>;
  /**
   * For routes that authenticate by themselves (auth 'none' here, to answer failures in their own
   * protocol): the credentials they accept, for the OpenAPI document only.
   */
  documentedAuth?: AuthRequirement;
  /**
   * The rate-limit buckets (src/limits.ts) a request takes one token from, after authentication
   * and parsing and before the handler. Unset: see defaultRateLimits. `[]`: none (health probes,
   * or a handler that limits in its own protocol).
   */
  rateLimits?: readonly RateLimitName[];
  /**
   * The route honours an Idempotency-Key (header, or `idempotency_key` in the body): the handler
   * receives it as `idempotency`, and the OpenAPI document declares the header. Handlers get the
   * key only this way, so the document cannot leave out a route that honours one.
   */
  idempotent?: boolean;
  /** A handler that writes the response itself (streams, redirects) returns `handled`. */
  handler(input: RouteInput<z.output<B>, z.output<Q>, z.output<P>>): Promise<unknown>;
}

export const handled = Symbol('handled');

export const route = <B extends z.ZodType, Q extends z.ZodType, P extends z.ZodType>(spec: RouteSpec<B, Q, P>) => spec as unknown as RouteSpec;

type Authenticator = (request: Request, requirement: AuthRequirement) => Promise<Principal | null>;
type RateLimiter = (names: readonly RateLimitName[], requester: Requester) => Promise<void>;

/**
 * Anonymous and admin requests count by address; a credential's reads and writes by credential,
 * and an API key's by all its users together too.
 */
export function rateLimitsOf(spec: RouteSpec): readonly RateLimitName[] {
  if (spec.rateLimits) return spec.rateLimits;
  if (spec.auth === 'none' || spec.auth === 'admin') return ['requestsPerAddress'];
  return spec.method === 'get' ? ['readsPerCredential', 'readsPerApiKey'] : ['writesPerCredential', 'writesPerApiKey'];
}

/** The client's address as express sees it under the TRUST_PROXY setting. */
export const clientAddress = (request: Request) => request.ip ?? request.socket.remoteAddress ?? 'unknown';

const emailOf = (body: unknown) =>
  body !== null && typeof body === 'object' && typeof (body as { email?: unknown }).email === 'string' ? (body as { email: string }).email : undefined;

/**
 * A body that arrived but that the JSON parser left alone was sent with another content type
 * (curl -d without -H sends application/x-www-form-urlencoded, fetch with a string text/plain):
 * say so, rather than that the body is not a JSON object, or, on a route whose body is optional,
 * silently ignoring it.
 */
function assertJsonContentType(request: Request) {
  const sentBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
  if (!sentBody || request.body !== undefined) return;
  const sentAs = request.headers['content-type'] ?? 'no Content-Type';
  throw new AppError('invalid_json', `the body must be JSON sent with Content-Type: application/json (it was sent as ${sentAs})`);
}

function parsePart(schema: z.ZodType | undefined, value: unknown, location: 'body' | 'query' | 'params') {
  if (!schema) return value;
  // A body was checked as it was parsed (src/app.ts); free text in a query (`q`) or a path reaches
  // PostgreSQL too, where a NUL character would be a failed statement rather than the caller's 4000.
  if (location !== 'body') assertSafeJson(value, location);
  // An endpoint whose body is optional accepts a request with no body at all.
  if (location === 'body' && value === undefined && schema.safeParse(undefined).success) return undefined;
  if (location === 'body' && (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw new AppError('invalid_json', value === undefined ? 'this request needs a JSON object body ({} at least)' : 'request body must be a JSON object');
  }
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(result.error, location, value);
  return result.data;
}

/**
 * Mounts each route on the router, and registers it in `lookup` too, in the same order, so that
 * the hot routes can be found without walking the router (rest/route-lookup.ts).
 */
export function mountRoutes(router: Router, routes: RouteSpec[], authenticate: Authenticator, limit: RateLimiter, lookup?: RouteLookup) {
  const allPaths = routes.map((spec) => spec.path);
  for (const spec of routes) {
    const rateLimits = rateLimitsOf(spec);
    const shadows = shadowsOf(spec.path, allPaths);
    // On a POST only: on an update, null for a field that cannot be cleared is refused, not ignored.
    const absentWhenNull = nullMeansAbsent(spec.method === 'post' && !spec.rawResponse ? spec.body : undefined);
    const handler = async (request: Request, response: Response, next: NextFunction) => {
      // A path that another route names literally is that route's (rest/route-paths.ts).
      if (isShadowed(request.path, shadows)) return next();
      try {
        // Authentication comes first so an anonymous caller learns nothing from validation errors.
        const principal = await authenticate(request, spec.auth);
        // The JSON-RPC and MCP endpoints (raw responses) read their bodies themselves, in their protocols.
        if (spec.body && !spec.rawResponse) assertJsonContentType(request);
        const body = parsePart(spec.body, withoutNulls(request.body, absentWhenNull), 'body');
        const query = parsePart(spec.query, request.query, 'query');
        const params = parsePart(spec.params, request.params, 'params');
        // After parsing, so a login is counted against the email it names; before the handler, so a
        // refused attempt costs no password hash.
        if (rateLimits.length > 0) await limit(rateLimits, { address: clientAddress(request), principal, account: emailOf(body) });
        const idempotency = spec.idempotent ? idempotencyRequestOf(request) : null;
        const data = await spec.handler({ body, query, params, principal, idempotency, request, response });
        if (data !== handled) sendData(response, spec.successStatus ?? 200, data);
      } catch (error) {
        next(error);
      }
    };
    const expressRoute = router.route(spec.path);
    expressRoute[spec.method](handler);
    lookup?.add(spec.method, spec.path, handler, expressRoute);
  }
}
