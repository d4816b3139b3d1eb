import { AppError } from '../../errors.ts';
import { isUuid } from '../../domain/ids.ts';
import { limits } from '../../limits.ts';

/** Opaque keyset cursors: base64url of the sort key parts, each checked on the way back in. */
type PartCheck = (part: string) => boolean;

/** A real instant, written exactly as toISOString writes it (so 2024-13-45 is refused). */
export const isoTimestamp: PartCheck = (part) =>
  /^(19[7-9]\d|[2-9]\d{3})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(part) && new Date(part).toISOString() === part;
export const uuidText: PartCheck = (part) => isUuid(part) && part === part.toLowerCase();
/** A positive integer that fits PostgreSQL's bigint. */
export const integerText: PartCheck = (part) => /^\d{1,19}$/.test(part) && BigInt(part) <= 9_223_372_036_854_775_807n;

export function encodeCursor(parts: string[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(cursor: string, shapes: PartCheck[]): string[] {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const valid =
      Array.isArray(parts) &&
      parts.length === shapes.length &&
      parts.every((part, index) => typeof part === 'string' && part.length < limits.cursorPartLengthMax && shapes[index]!(part));
    if (valid) return parts as string[];
  } catch {
    // Fall through to the validation error below.
  }
  throw new AppError('validation_error', 'invalid cursor', { errors: [{ path: 'query.cursor', message: 'not a cursor this service issued' }] });
}
