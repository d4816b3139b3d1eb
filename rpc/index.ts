import type { Server } from 'node:http';
import type { RouteSpec } from '../rest/route.ts';
import type { Engine } from '../src/engine/index.ts';

/**
 * The JSON-RPC (A2A) facade: HTTP routes (documented in OpenAPI like every other route) and the
 * WebSocket transport. The global JSON body parser skips /api/v1/rpc so this layer can answer
 * malformed JSON with a JSON-RPC parse error instead of the REST envelope.
 */
export function rpcRoutes(_engine: Engine): RouteSpec[] {
  return [];
}

export function attachRpcWebSocket(_server: Server, _engine: Engine): { close(): Promise<void> } {
  return { close: async () => {} };
}
