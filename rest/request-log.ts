import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../src/logger.ts';
import { type RequestContext, requestContext } from '../src/request-context.ts';

/** A client's own request id is kept when it is one of these; anything else is replaced. */
const wellFormedRequestId = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Gives every request an id (the client's X-Request-Id when well-formed, else a new UUID), sends
 * it back in X-Request-Id, makes every log line written while serving it carry it, and writes one
 * access line at info when the response is done (or the client went away). The path is logged
 * without its query string, which may carry secrets. A stream is one request, so it gets one line,
 * when it ends, and none per heartbeat.
 */
export function requestIdentity(log: Logger) {
  return (request: Request, response: Response, next: NextFunction) => {
    const given = request.get('x-request-id');
    const context: RequestContext = { requestId: given !== undefined && wellFormedRequestId.test(given) ? given : randomUUID() };
    contexts.set(request, context);
    response.setHeader('X-Request-Id', context.requestId);
    const startedAt = process.hrtime.bigint();
    response.once('close', () => {
      const durationMs = Number((process.hrtime.bigint() - startedAt) / 1000n) / 1000;
      requestContext.run(context, () => log.info('request', {
        method: request.method,
        path: request.originalUrl.split('?', 1)[0],
        status: response.statusCode,
        duration_ms: durationMs,
        ...(response.writableFinished ? {} : { aborted: true }),
      }));
    });
    requestContext.run(context, next);
  };
}

/**
 * Enters the request's context again. Some steps (reading the body) resume from socket events,
 * which run outside the context the request entered with; mounted after them, this restores it.
 */
export function reenterRequestContext(request: Request, _response: Response, next: NextFunction) {
  const context = contexts.get(request);
  if (context === undefined || requestContext.getStore() === context) return next();
  requestContext.run(context, next);
}

const contexts = new WeakMap<Request, RequestContext>();
