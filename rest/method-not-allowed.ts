import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../src/errors.ts';
import type { RouteSpec } from './route.ts';
import { isShadowed, patternOf, shadowsOf } from './route-paths.ts';

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
