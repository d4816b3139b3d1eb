import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../src/errors.ts';
import type { RouteSpec } from './route.ts';

/**
 * A known path asked with a method it does not have answers 405 (4050) with an `Allow` header,
 * instead of the 4040 of an unknown path. The methods come from the route table, so they cannot
 * drift from what is mounted. Mounted after the routes, so it only sees requests none matched.
 * HEAD is allowed wherever GET is, because express answers HEAD with the GET route. OPTIONS gets
 * the same 405: there is no CORS surface, and the Allow header is what OPTIONS asks for anyway.
 */
export function methodNotAllowed(routes: RouteSpec[]) {
  const paths = new Map<string, { pattern: RegExp; shadows: RegExp[]; methods: Set<string> }>();
  const allPaths = routes.map((spec) => spec.path);
  for (const spec of routes) {
    const entry = paths.get(spec.path) ?? { pattern: patternOf(spec.path), shadows: shadowsOf(spec.path, allPaths), methods: new Set<string>() };
    entry.methods.add(spec.method.toUpperCase());
    if (spec.method === 'get') entry.methods.add('HEAD');
    paths.set(spec.path, entry);
  }
  const entries = [...paths.values()];
  return (request: Request, _response: Response, next: NextFunction) => {
    const allowed = new Set<string>();
    for (const { pattern, shadows, methods } of entries) {
      if (pattern.test(request.path) && !isShadowed(request.path, shadows)) for (const method of methods) allowed.add(method);
    }
    if (allowed.size === 0 || allowed.has(request.method)) return next();
    const allow = [...allowed].sort();
    next(new AppError('method_not_allowed', `${request.method} is not allowed here`, { allow }));
  };
}

/**
 * The patterns of the paths that are more specific than `path` (a literal segment where it has a
 * `:param`, the same elsewhere): `/api/v1/capabilities/batch` for `/api/v1/capabilities/:cap_id`.
 * A request to such a path belongs to that path, whatever its method, so the parameter route
 * leaves it alone: `GET /capabilities/batch` is 405 with `Allow: POST`, not a 400 saying `batch`
 * is not a UUID, and the answer does not depend on the order the routes were mounted in.
 */
export function shadowsOf(path: string, allPaths: string[]): RegExp[] {
  const own = path.split('/');
  const moreSpecific = allPaths.filter((other) => {
    const theirs = other.split('/');
    if (other === path || theirs.length !== own.length) return false;
    let narrower = false;
    for (let index = 0; index < own.length; index++) {
      const ownParam = own[index]!.startsWith(':');
      const theirParam = theirs[index]!.startsWith(':');
      if (!ownParam && (theirParam || theirs[index] !== own[index])) return false;
      if (ownParam && !theirParam) narrower = true;
    }
    return narrower;
  });
  return [...new Set(moreSpecific)].map(patternOf);
}

export const isShadowed = (path: string, shadows: RegExp[]) => shadows.length > 0 && shadows.some((pattern) => pattern.test(path));

/**
 * Express path syntax as the router matches it here (case sensitive, strict about a trailing
 * slash): a `:name` segment matches one non-empty segment, everything else matches literally.
 */
function patternOf(path: string): RegExp {
  const segments = path.split('/').map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}
