import type { Response } from 'express';
import { type AppError, errorBody } from '../src/errors.ts';

/** The one place the response envelope is rendered, for successes and failures alike. */
export const unixSeconds = () => Math.floor(Date.now() / 1000);

export function sendData(response: Response, status: number, data: unknown, message = 'success') {
  response.status(status).json({ code: 0, message, data: data ?? null, timestamp: unixSeconds() });
}

/** A refusal for rate reasons or an unavailable backend tells how long to wait, in seconds, in the standard header too. */
export function sendRetryAfter(response: Response, error: AppError) {
  if (
    (error.errorName === 'rate_limited' || error.errorName === 'daily_limit_reached' || error.errorName === 'unavailable') &&
    typeof error.data?.retry_after_seconds === 'number'
  ) {
    response.setHeader('Retry-After', String(error.data.retry_after_seconds));
  }
}

export function sendError(response: Response, error: AppError) {
  sendRetryAfter(response, error);
  if (error.errorName === 'method_not_allowed' && Array.isArray(error.data?.allow)) {
    response.setHeader('Allow', error.data.allow.join(', '));
  }
  response.status(error.httpStatus).json({ ...errorBody(error), timestamp: unixSeconds() });
}
