/**
 * Route paths as the router matches them, shared by the router's handlers (rest/route.ts) and the
 * 405 answer (rest/method-not-allowed.ts), so that both agree on which route a path belongs to.
 */
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
export function patternOf(path: string): RegExp {
  const segments = path.split('/').map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${segments.join('/')}$`);
}
