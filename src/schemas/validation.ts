import type { z } from 'zod';
import { AppError } from '../errors.ts';

/** A zod failure becomes 4000 with `data.errors = [{path, message}]`, as decisions section 1 says. */
export function validationError(error: z.ZodError, location: string): AppError {
  const errors = error.issues.map((issue) => ({
    path: [location, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  return new AppError('validation_error', 'request failed validation', { errors });
}
