import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * The route table as one lookup, for the hot routes (docs/decisions/api-surface.md "Hot routes
 * skip the middleware stack"): express finds a route by walking every middleware of the app and
 * then every route of the router in turn, testing each one's regular expression, and a read near
 * the end of the table paid for about 200 tests. This finds the same route the router would (the
 * first registered that matches: strict about a trailing slash, case-sensitive, a `:param` being
 * one or more characters other than `/`) by comparing segments, and runs its handler at once.
 *
 * Only routes whose requests the middleware between this lookup and the router would leave
 * alone, or would only hand to the body parser, are dispatched here: GET requests under /api/
 * without a body (the JSON parser and the body checks have nothing to do; the OAuth endpoints
 * live elsewhere), the endpoints that read their own body (JSON-RPC), and POST requests under
 * /api/ (the state changes), whose body goes through `parseBody`, the same JSON parser and body
 * checks the middleware would run, before the handler. Anything else, and any path with a
 * percent-encoding (the router decodes parameters and answers a bad encoding), goes on to
 * express unchanged.
 */
interface Entry {
  /** Literal segments, and null where a parameter goes. */
  segments: (string | null)[];
  names: string[];
  handle: RequestHandler;
  /** What express would set as request.route (its Route object). */
  route: unknown;
  fast: boolean;
  /** The body goes through `parseBody` before the handler runs. */
  parsesBody: boolean;
  order: number;
}

export interface RouteLookupOptions {
  /** Paths whose POST body the endpoint reads itself (the JSON parser skips them). */
  readsOwnBody(path: string): boolean;
  /**
   * What the middleware between the lookup and the router does with a POST body under /api/ (the
   * JSON parser, then the body checks), as one middleware. Without it such a POST goes to express.
   */
  parseBody?(request: Request, response: Response, next: (error?: unknown) => void): void;
}

const segmentsOf = (path: string) => path.slice(1).split('/');

export function createRouteLookup({ readsOwnBody, parseBody }: RouteLookupOptions) {
  // By method, then by number of segments, in the order the routes were registered.
  const table = new Map<string, Map<number, Entry[]>>();
  let order = 0;

  /** Registers a route as the router has it: call in the router's order. */
  function add(method: string, path: string, handle: RequestHandler, route: unknown) {
    const upper = method.toUpperCase();
    const parts = segmentsOf(path);
    if (!path.startsWith('/') || parts.some((part) => /[*?{}()]/.test(part) || (part.includes(':') && !/^:\w+$/.test(part)))) {
      throw new Error(`route-lookup: the path ${path} uses syntax beyond literal segments and :params`);
    }
    const ownBody = upper === 'POST' && readsOwnBody(path);
    const parsesBody = upper === 'POST' && !ownBody && path.startsWith('/api/') && parseBody !== undefined;
    const entry: Entry = {
      segments: parts.map((part) => (part.startsWith(':') ? null : part)),
      names: parts.filter((part) => part.startsWith(':')).map((part) => part.slice(1)),
      handle,
      route,
      fast: (upper === 'GET' && path.startsWith('/api/')) || ownBody || parsesBody,
      parsesBody,
      order: order++,
    };
    const byLength = table.get(upper) ?? table.set(upper, new Map()).get(upper)!;
    const entries = byLength.get(parts.length) ?? byLength.set(parts.length, []).get(parts.length)!;
    entries.push(entry);
  }

  /** The route the router would choose for this method and path, with its parameters; null when none. */
  function find(method: string, path: string): { entry: Entry; params: Record<string, string> } | null {
    const parts = segmentsOf(path);
    const entries = table.get(method)?.get(parts.length);
    if (entries === undefined) return null;
    for (const entry of entries) {
      let matches = true;
      for (let index = 0; index < parts.length && matches; index++) {
        const literal = entry.segments[index];
        matches = literal === null ? parts[index] !== '' : literal === parts[index];
      }
      if (!matches) continue;
      const params: Record<string, string> = Object.create(null) as Record<string, string>;
      let name = 0;
      for (let index = 0; index < parts.length; index++) if (entry.segments[index] === null) params[entry.names[name++]!] = parts[index]!;
      return { entry, params };
    }
    return null;
  }

  /** The middleware: a hot route's handler at once; anything else to the next middleware. */
  function dispatch(request: Request, response: Response, next: NextFunction) {
    const method = request.method;
    if (method !== 'GET' && method !== 'POST') return next();
    const path = request.path;
    if (path.includes('%')) return next();
    const found = find(method, path);
    if (found === null || !found.entry.fast) return next();
    const sentBody = request.headers['transfer-encoding'] !== undefined || request.headers['content-length'] !== undefined;
    if (method === 'GET' && sentBody) return next();
    // What the router sets before a route runs.
    request.baseUrl = '';
    request.originalUrl ||= request.url;
    request.params = found.params;
    (request as { route?: unknown }).route = found.entry.route;
    const handle = found.entry.handle;
    // A handler passes control on without an error only when the path is another route's (a
    // literal segment where it has a parameter): the router and the 405 answer then decide.
    const run = () => handle(request, response, (error?: unknown) => (error === undefined || error === null ? next() : next(error)));
    if (!found.entry.parsesBody) return run();
    // A body the parser refuses (bad JSON, too large, …) goes to the error handler, as from the middleware.
    parseBody!(request, response, (error?: unknown) => (error === undefined || error === null ? run() : next(error)));
  }

  return { add, find, dispatch };
}

export type RouteLookup = ReturnType<typeof createRouteLookup>;
