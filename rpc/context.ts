import type { Principal } from '../src/engine/common/index.ts';
import type { Logger } from '../src/logger.ts';
import type { Generation } from './shapes.ts';

/**
 * What every JSON-RPC method is called with, whatever the transport (HTTP or WebSocket). Its own
 * module so that a method kept in a file of its own (list-tasks.ts) need not import the method
 * table that imports it.
 */
export interface RpcContext {
  principal: Principal;
  /** From the `A2A-Version` header, or the query parameter of that name. */
  headerGeneration: Generation;
  /** The `A2A-Version` as sent (header or query parameter, cut to a2aVersionEchoLengthMax), when this server does not speak it. */
  unsupportedVersion?: string;
  /** WebSocket only: ends one of this connection's subscriptions. */
  unsubscribe?: (subscription: string) => boolean;
  /** The logger for this exchange (over HTTP it carries the request id). */
  log?: Logger;
}
