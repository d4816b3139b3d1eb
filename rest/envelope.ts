import type { Response } from 'express';
import { type AppError, errorBody } from '../src/errors.ts';

/** The one place the response envelope is rendered, for successes and failures alike. */
export const unixSeconds = () => Math.floor(Date.now() / 1000);

export function sendData(response: Response, status: number, data: unknown, message = 'success') {
  sendJson(response, status, { code: 0, message, data: data ?? null, timestamp: unixSeconds() });
}

/**
 * What express's `response.status(status).json(body)` sends, written in one call: the same status,
 * body and headers (Content-Type application/json; charset=utf-8 and Content-Length beside those
 * already set) without express's header bookkeeping, which cost a hot read about as much as its
 * handler's own work (docs/decisions/api-surface.md "Hot routes skip the middleware stack"). The
 * cases where express does more (a HEAD request, a conditional request it may answer 304, a
 * Content-Type chosen ahead) go to express.
 */
export function sendJson(response: Response, status: number, body: unknown) {
  const headers = response.req.headers;
  if (
    response.req.method === 'HEAD' ||
    headers['if-none-match'] !== undefined ||
    headers['if-modified-since'] !== undefined ||
    response.hasHeader('content-type')
  ) {
    response.status(status).json(body);
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
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
  sendJson(response, error.httpStatus, { ...errorBody(error), timestamp: unixSeconds() });
}
