import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';

/**
 * Every JSON request passes here before any schema sees it. PostgreSQL refuses the NUL character
 * in text and jsonb, and very deep nesting breaks jsonb and recursive code alike; both are the
 * caller's error (4000), found before anything is stored rather than as a database failure.
 */
export function assertSafeJson(value: unknown, location: string): void {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: location }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) throw unsafe(path, 'must not contain the NUL character');
    } else if (current !== null && typeof current === 'object') {
      if (depth >= limits.jsonDepthMax) throw unsafe(path, `is nested deeper than ${limits.jsonDepthMax} levels`);
      for (const [key, child] of Object.entries(current)) {
        if (key.includes('\u0000')) throw unsafe(path, 'has a key with the NUL character');
        stack.push({ value: child, depth: depth + 1, path: `${path}.${key}` });
      }
    }
  }
}

function unsafe(path: string, message: string): AppError {
  return new AppError('validation_error', 'request failed validation', { errors: [{ path, message }] });
}
