import type { z } from 'zod';
import { AppError } from '../errors.ts';

/** The value at a path of the request's input, or undefined where the path leads nowhere. */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/**
 * A field that was simply left out fails its type or format check; saying "required" tells the
 * client what to do, where "must be a UUID" or a list of 22 category codes sends it looking for a
 * formatting mistake. Checks of our own (a custom issue such as "required when auto_accept is
 * true") keep their words.
 */
const typeOrFormatCodes = new Set(['invalid_type', 'invalid_value', 'invalid_union', 'invalid_format']);

function messageOf(issue: z.core.$ZodIssue, input: unknown): string {
  const missing = issue.path.length > 0 && typeOrFormatCodes.has(issue.code) && valueAt(input, issue.path) === undefined;
  return missing ? 'required' : issue.message;
}

/** A zod failure becomes 4000 with `data.errors = [{path, message}]`, as decisions section 1 says. */
export function validationError(error: z.ZodError, location: string, input?: unknown): AppError {
  const errors = error.issues.map((issue) => ({
    path: [location, ...issue.path.map(String)].join('.'),
    message: input === undefined ? issue.message : messageOf(issue, input),
  }));
  return new AppError('validation_error', 'request failed validation', { errors });
}
