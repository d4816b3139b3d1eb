import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { type Logger, withFields } from '../src/logger.ts';

/** A client's own request id is kept when it is one of these; anything else is replaced. */
const wellFormedRequestId = /^[A-Za-z0-9._-]{1,128}$/;

const requestIds = new WeakMap<Request, string>();

/**
 * Gives every request an id (the client's X-Request-Id when well-formed, else a new UUID), sends
 * it back in X-Request-Id, and writes one access line at info when the response is done (or the
 * client went away). The path is logged without its query string, which may carry secrets. A
 * stream is one request, so it gets one line, when it ends, and none per heartbeat. Code that logs
 * on behalf of a request takes its logger from requestLogger(), which carries the id.
 */
export function requestIdentity(log: Logger) {
  return (request: Request, response: Response, next: NextFunction) => {
    const given = request.get('x-request-id');
    const requestId = given !== undefined && wellFormedRequestId.test(given) ? given : randomUUID();
    requestIds.set(request, requestId);
    response.setHeader('X-Request-Id', requestId);
    const startedAt = process.hrtime.bigint();
    response.once('close', () => {
      const durationMs = Number((process.hrtime.bigint() - startedAt) / 1000n) / 1000;
      log.info('request', {
        request_id: requestId,
        method: request.method,
        path: request.originalUrl.split('?', 1)[0],
        status: response.statusCode,
        duration_ms: durationMs,
        ...(response.writableFinished ? {} : { aborted: true }),
      });
    });
    next();
  };
}

/** The logger for lines written on behalf of `request`: each carries its request id. */
export function requestLogger(request: Request, log: Logger): Logger {
  const requestId = requestIds.get(request);
  return requestId === undefined ? log : withFields(log, { request_id: requestId });
}
