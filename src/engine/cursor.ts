import { AppError } from '../errors.ts';

/** Opaque keyset cursors: base64url of the sort key parts, each checked on the way back in. */
export const isoTimestamp = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const uuidText = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const integerText = /^\d{1,19}$/;

export function encodeCursor(parts: string[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(cursor: string, shapes: RegExp[]): string[] {
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const valid = Array.isArray(parts) && parts.length === shapes.length && parts.every((part, index) => typeof part === 'string' && shapes[index]!.test(part));
    if (valid) return parts as string[];
  } catch {
    // Fall through to the validation error below.
  }
  throw new AppError('validation_error', 'invalid cursor', { errors: [{ path: 'query.cursor', message: 'not a cursor this service issued' }] });
}
