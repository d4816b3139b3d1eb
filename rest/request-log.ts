import { randomUUID } from 'node:crypto';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import { type Logger, withFields } from '../src/logger.ts';

/** A client's own request id is kept when it is one of these; anything else is replaced. */
const wellFormedRequestId = /^[A-Za-z0-9._-]{1,128}$/;

interface RequestState {
  requestId: string;
  startedAtMs: number;
}

/**
 * Every open stream keeps its request's state for its whole life, so it is kept small: one entry
 * here, one shared close listener, and the X-Request-Id header put into the response's head as it
 * is written rather than set ahead (a header set ahead makes Node keep a copy of every header of
 * the response for as long as it is open; measured in docs/benchmarks.md).
 */
const states = new WeakMap<Request, RequestState>();

/**
 * Gives every request an id (the client's X-Request-Id when well-formed, else a new UUID), sends
 * it back in X-Request-Id, and writes one access line at info when the response is done (or the
 * client went away). The path is logged without its query string, which may carry secrets. A
 * stream is one request, so it gets one line, when it ends, and none per heartbeat. Code that logs
 * on behalf of a request takes its logger from requestLogger(), which carries the id.
 */
export function installRequestIds(app: Express, log: Logger) {
  const writeHead = app.response.writeHead as (this: ServerResponse, ...args: unknown[]) => ServerResponse;
  app.response.writeHead = function (this: ServerResponse, statusCode: number, ...rest: unknown[]) {
    const requestId = states.get(this.req as Request)?.requestId;
    if (requestId === undefined || this.hasHeader('x-request-id')) return writeHead.call(this, statusCode, ...rest);
    const messageGiven = typeof rest[0] === 'string';
    const headers = rest[messageGiven ? 1 : 0];
    // With no header set ahead, Node writes the given object straight into the head and keeps
    // nothing of it: the id joins that object. Otherwise it joins the headers already kept.
    if (this.getHeaderNames().length === 0 && (headers === undefined || (typeof headers === 'object' && !Array.isArray(headers)))) {
      const withId: OutgoingHttpHeaders = { ...(headers as OutgoingHttpHeaders | undefined), 'X-Request-Id': requestId };
      return writeHead.call(this, statusCode, ...(messageGiven ? [rest[0], withId] : [withId]));
    }
    this.setHeader('X-Request-Id', requestId);
    return writeHead.call(this, statusCode, ...rest);
  } as typeof app.response.writeHead;

  const writeAccessLine = function (this: Response) {
    const request = this.req;
    const state = states.get(request);
    if (state === undefined) return;
    log.info('request', {
      request_id: state.requestId,
      method: request.method,
      path: request.originalUrl.split('?', 1)[0],
      status: this.statusCode,
      duration_ms: Math.round((performance.now() - state.startedAtMs) * 1000) / 1000,
      ...(this.writableFinished ? {} : { aborted: true }),
    });
  };

  app.use((request: Request, response: Response, next: NextFunction) => {
    const given = request.get('x-request-id');
    states.set(request, { requestId: given !== undefined && wellFormedRequestId.test(given) ? given : randomUUID(), startedAtMs: performance.now() });
    response.on('close', writeAccessLine);
    next();
  });
}

/** The logger for lines written on behalf of `request`: each carries its request id. */
export function requestLogger(request: Request, log: Logger): Logger {
  const requestId = states.get(request)?.requestId;
  return requestId === undefined ? log : withFields(log, { request_id: requestId });
}
