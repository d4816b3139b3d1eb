import http from 'node:http';
import type { Express } from 'express';

/**
 * The HTTP server for the app, with requests and responses made with express's prototypes from
 * the start. express 5 otherwise calls Object.setPrototypeOf on every request and response as it
 * arrives, and V8 then gives each of them a hidden class and a property table of its own (about
 * 1 KiB each, measured with heap snapshots in docs/benchmark-history.md "Fan-out at the cost of a
 * bare stream"): 2 KiB kept for as long as a stream stays open, and property lookups on request
 * and response that no inline cache can share. Built this way, express's setPrototypeOf finds the
 * prototype already in place and changes nothing. `listener` (the app by default) may wrap the
 * app, as the lifecycle bench's profiler does; requests still get the app's prototypes.
 */
export function createAppServer(app: Express, listener: http.RequestListener = app): http.Server {
  function AppRequest(...args: unknown[]) {
    return Reflect.construct(http.IncomingMessage, args, AppRequest) as http.IncomingMessage;
  }
  AppRequest.prototype = app.request;
  function AppResponse(...args: unknown[]) {
    return Reflect.construct(http.ServerResponse, args, AppResponse) as http.ServerResponse;
  }
  AppResponse.prototype = app.response;
  return http.createServer(
    {
      IncomingMessage: AppRequest as unknown as typeof http.IncomingMessage,
      ServerResponse: AppResponse as unknown as typeof http.ServerResponse,
    },
    listener,
  );
}
