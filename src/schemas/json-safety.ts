import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';

/**
 * Every JSON request passes here before any schema sees it (REST, JSON-RPC over HTTP and over
 * WebSocket), so that anything PostgreSQL cannot store is the caller's error (4000 with the path),
 * found before anything is stored rather than as a database failure answered with 5000:
 * - the NUL character, which text and jsonb refuse;
 * - a lone UTF-16 surrogate (half of a pair), which is not valid Unicode and which PostgreSQL
 *   refuses as UTF-8 text or as a `\u` escape in jsonb;
 * - nesting deeper than the limit, which breaks jsonb and recursive code alike.
 * Keys are checked like values. The keys `__proto__` and `constructor` are refused too: parsed
 * JSON keeps them as plain keys, but any later copy into a plain object (a schema, a spread)
 * either drops `__proto__` silently or changes the copy's prototype (docs/decisions/api-surface.md
 * "Input PostgreSQL cannot store, and prototype keys").
 */
export function assertSafeJson(value: unknown, location: string): void {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: location }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = unstorableText(current);
      if (problem) throw unsafe(path, `must not contain ${problem}`);
    } else if (current !== null && typeof current === 'object') {
      if (depth >= limits.jsonDepthMax) throw unsafe(path, `is nested deeper than ${limits.jsonDepthMax} levels`);
      for (const [key, child] of Object.entries(current)) {
        const problem = unstorableText(key);
        if (problem) throw unsafe(path, `has a key with ${problem}`);
        if (prototypeKeys.has(key)) throw unsafe(`${path}.${key}`, `is a key that is not accepted (${[...prototypeKeys].join(', ')})`);
        stack.push({ value: child, depth: depth + 1, path: `${path}.${key}` });
      }
    }
  }
}

const prototypeKeys = new Set(['__proto__', 'constructor']);

/** With the `u` flag, `\p{Surrogate}` matches only a surrogate that is not part of a pair. */
const loneSurrogate = /\p{Surrogate}/u;

function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'the NUL character';
  if (loneSurrogate.test(text)) return 'a lone UTF-16 surrogate (invalid Unicode)';
  return null;
}

function unsafe(path: string, message: string): AppError {
  return new AppError('validation_error', 'request failed validation', { errors: [{ path, message }] });
}
