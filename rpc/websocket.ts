import { type OriginGuard, originGuard } from '../rest/origin-guard.ts';
import { assertSafeJson } from '../src/schemas/json-safety.ts';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { JSONRPCResponse } from 'json-rpc-2.0';
import { WebSocket, WebSocketServer } from 'ws';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import type { Logger } from '../src/logger.ts';
import { AppError } from '../src/errors.ts';
import { limits } from '../src/limits.ts';
import { type Dispatcher, idOf } from './dispatch.ts';
import { errorResponse, parseErrorResponse, toRpcError, toRpcErrorIn } from './errors.ts';
import { authenticateHeaders } from './http.ts';
import { compileTrustProxy, peerAddress } from '../rest/client-address.ts';
import type { RpcContext } from './context.ts';
import { requestedVersionOf, versionContextOf } from './shapes.ts';
import { type StreamEndReason, StreamStart, type TaskStreamSink, openTaskStream } from './task-stream.ts';

/**
 * JSON-RPC over WebSocket at /api/v1/rpc/ws: the same methods, batches and errors as HTTP.
 *
 * - Credentials are the upgrade request's headers (as REST); a failure is answered with the HTTP
 *   status (401 / 400) and the JSON-RPC error as body, and no upgrade. The principal then holds
 *   for the connection's life. `A2A-Version` on the upgrade request picks the shared names' shapes.
 * - A streaming method is answered at once with `{subscription}`; the stream's events follow as
 *   notifications `{"method": "tasks/update", "params": {subscription, sequence?, final, result}}`
 *   where `result` is exactly what an SSE `data:` line's result would be. The last one has
 *   `final: true`; a subscription cut short (server shutdown, slow reader) ends with
 *   `{subscription, final: true, reason}` and no result. `tasks/unsubscribe {subscription}`
 *   ends one early (`{unsubscribed: true | false}`). Streaming methods may be batched here.
 * - Messages over 1 MiB close the socket (1009); a reader that falls behind by more than the
 *   stream buffer limit is disconnected; a ping every heartbeat interval drops dead peers.
 */
export const wsPath = '/api/v1/rpc/ws';
export const updateMethod = 'tasks/update';
const subscriptionsPerSocketMax = limits.rpcSubscriptionsPerSocketMax;
const closeWaitMs = 2_000;

interface Connection {
  socket: WebSocket;
  principal: Principal;
  /** The upgrade's credential headers, checked again on every message and heartbeat. */
  credentials: IncomingHttpHeaders;
  /** The upgrade request's `A2A-Version` header, or its query parameter of that name. */
  version: string | undefined;
  alive: boolean;
  /** The peer's address, for rate limits keyed by address. */
  address: string;
  subscriptions: Map<string, { close(): void }>;
}

const credentialHeaders = ['x-api-key', 'x-platform-user-id', 'authorization'] as const;
const pickCredentials = (headers: IncomingHttpHeaders): IncomingHttpHeaders =>
  Object.fromEntries(credentialHeaders.filter((name) => headers[name] !== undefined).map((name) => [name, headers[name]]));

const reasons: Record<number, string> = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 429: 'Too Many Requests' };

function refuseUpgrade(socket: Duplex, status: number, body: unknown, retryAfterSeconds?: unknown) {
  const text = JSON.stringify(body);
  const retryAfter = typeof retryAfterSeconds === 'number' ? `Retry-After: ${retryAfterSeconds}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? 'Error'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n${retryAfter}Connection: close\r\n\r\n${text}`,
  );
}

function send(connection: Connection, message: unknown): boolean {
  const { socket } = connection;
  if (socket.readyState !== WebSocket.OPEN) return false;
  // A reader that stopped reading must not hold the server's memory; it resubscribes later.
  if (socket.bufferedAmount > limits.streamBufferedBytesMax) {
    socket.terminate();
    return false;
  }
  socket.send(JSON.stringify(message));
  return true;
}

/**
 * One subscription of a socket: the task stream's sink, as one object (a client may hold up to
 * limits.rpcSubscriptionsPerSocketMax of them on every socket). Notifications wait in `queued`
 * until the answer that names the subscription has been sent (flush()).
 */
class SocketSubscription implements TaskStreamSink {
  private queued: unknown[] | null = [];
  private lastWasFinal = false;
  ended = false;
  stream: { close(): void } | null = null;
  release: () => void = () => {};

  constructor(
    private readonly connection: Connection,
    readonly id: string,
  ) {}

  emit(result: unknown, sequence: string | undefined, final: boolean): boolean {
    this.lastWasFinal = final;
    return this.notify({ ...(sequence ? { sequence } : {}), final, result });
  }

  end(reason?: StreamEndReason) {
    this.ended = true;
    this.release();
    this.connection.subscriptions.delete(this.id);
    if (!this.lastWasFinal && reason && reason !== 'slow_consumer') this.notify({ final: true, reason });
  }

  private notify(params: Record<string, unknown>): boolean {
    const message = { jsonrpc: '2.0', method: updateMethod, params: { subscription: this.id, ...params } };
    if (this.queued === null) return send(this.connection, message);
    this.queued.push(message);
    return true;
  }

  /** The answer naming the subscription is sent: what came meanwhile goes out now. */
  flush() {
    const queued = this.queued ?? [];
    this.queued = null;
    for (const message of queued) send(this.connection, message);
  }

  /** Unsubscribed, or its socket closed. */
  close() {
    this.stream?.close();
    this.release();
  }

  /** Its API key was revoked. */
  revoke() {
    this.stream?.close();
    this.release();
    this.connection.subscriptions.delete(this.id);
  }
}

class RpcSockets {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: limits.requestBodyBytesMax });
  private readonly connections = new Set<Connection>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly log: Logger;
  /** Whose X-Forwarded-For to believe, as for REST (TRUST_PROXY). */
  private readonly trustProxy: ReturnType<typeof compileTrustProxy>;
  /** A browser page of another origin may not open the socket (DNS rebinding; rest/origin-guard.ts). */
  private readonly guard: OriginGuard;

  constructor(
    private readonly server: Server,
    private readonly engine: Engine,
    private readonly dispatcher: Dispatcher,
  ) {
    this.log = engine.dependencies.log;
    this.trustProxy = compileTrustProxy(engine.dependencies.config.TRUST_PROXY);
    this.guard = originGuard(engine.dependencies.config);
    server.on('upgrade', this.onUpgrade);
    this.heartbeat = setInterval(() => this.beat(), engine.dependencies.config.STREAM_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  private readonly onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== wsPath) {
      // Another upgrade handler may own that path; without one, the socket must not hang.
      if (this.server.listenerCount('upgrade') === 1)
        refuseUpgrade(socket, 404, errorResponse(null, toRpcError(new AppError('not_found', 'no such route'), this.log)));
      return;
    }
    const address = peerAddress(request, this.trustProxy);
    Promise.resolve()
      .then(() => this.guard(request.headers))
      .then(() => authenticateHeaders(this.engine, request.headers, address))
      .then((principal) => {
        // Over the caps the upgrade is refused with 429 and Retry-After, before any socket exists.
        // A revocation of the API key closes the connection (and the socket's close releases it):
        // once it is a WebSocket, as an expired token does, with -32110 and 1008, so that its
        // client tells a revoked credential from a network drop and does not just reconnect.
        let endRevoked = (): void => void socket.destroy();
        const release = this.engine.admission.webSockets.open(principal, () => endRevoked());
        // A client that left during authentication has already emitted 'close'.
        if (socket.destroyed) return release();
        socket.once('close', release);
        this.wss.handleUpgrade(request, socket, head, (ws) => {
          const connection = this.onConnection(ws, principal, request, address);
          endRevoked = () => this.closeForCredentials(connection, new AppError('unauthenticated', 'the API key was revoked'));
        });
      })
      .catch((error: unknown) => {
        const status = error instanceof AppError ? error.httpStatus : 500;
        refuseUpgrade(
          socket,
          status,
          errorResponse(null, toRpcError(error, this.log)),
          error instanceof AppError ? error.data?.retry_after_seconds : undefined,
        );
      });
  };

  private onConnection(socket: WebSocket, principal: Principal, request: IncomingMessage, address: string) {
    const credentials = pickCredentials(request.headers);
    const connection: Connection = {
      socket,
      principal,
      credentials,
      version: requestedVersionOf(request),
      alive: true,
      address,
      subscriptions: new Map(),
    };
    this.connections.add(connection);
    socket.on('pong', () => {
      connection.alive = true;
    });
    socket.on('message', (data: Buffer) => {
      this.onMessage(connection, data).catch((error: unknown) => this.log.error('json-rpc websocket message failed', { error }));
    });
    socket.on('close', () => {
      this.connections.delete(connection);
      for (const subscription of connection.subscriptions.values()) subscription.close();
      connection.subscriptions.clear();
    });
    socket.on('error', () => socket.terminate());
    return connection;
  }

  private contextOf(connection: Connection): RpcContext {
    return {
      principal: connection.principal,
      ...versionContextOf(connection.version),
      unsubscribe: (id) => {
        const subscription = connection.subscriptions.get(id);
        if (!subscription) return false;
        connection.subscriptions.delete(id);
        subscription.close();
        return true;
      },
    };
  }

  private async onMessage(connection: Connection, data: Buffer) {
    let payload: unknown;
    try {
      payload = JSON.parse(data.toString('utf8'));
    } catch {
      send(connection, parseErrorResponse('message is not valid JSON'));
      return;
    }
    try {
      assertSafeJson(payload, 'params');
    } catch (error) {
      send(connection, errorResponse(null, toRpcError(error, this.engine.dependencies.log)));
      return;
    }
    if (!(await this.stillAuthenticated(connection, payload))) return;
    if (!(await this.withinRateLimit(connection, payload))) return;
    const context = this.contextOf(connection);
    const result = await this.dispatcher.dispatch(payload, context, { streamsInBatch: true });
    if (result === null) return;
    const opened: SocketSubscription[] = [];
    const settle = async (response: JSONRPCResponse): Promise<JSONRPCResponse> => {
      if (!(response.result instanceof StreamStart)) return response;
      try {
        const subscription = await this.subscribe(connection, context, response.result);
        opened.push(subscription);
        return { jsonrpc: '2.0', id: response.id, result: { subscription: subscription.id } };
      } catch (error) {
        return errorResponse(response.id, toRpcErrorIn(response.result.generation === 'v1.0' || context.headerGeneration === 'v1.0', error, this.log));
      }
    };
    send(connection, Array.isArray(result) ? await Promise.all(result.map(settle)) : await settle(result));
    // Notifications queued meanwhile go out only now, after the answer that names their subscription.
    for (const subscription of opened) subscription.flush();
  }

  /** Turns a StreamStart answer into a subscription whose events become `tasks/update` notifications. */
  private async subscribe(connection: Connection, context: RpcContext, start: StreamStart): Promise<SocketSubscription> {
    if (connection.subscriptions.size >= subscriptionsPerSocketMax) {
      throw new AppError('conflict', `at most ${subscriptionsPerSocketMax} subscriptions per connection`);
    }
    await this.engine.admission.consume(['streamOpensPerCredential', 'streamOpensPerApiKey'], { address: connection.address, principal: context.principal });
    // A subscription is a stream like an SSE one: it counts against the same per-credential,
    // per-key and per-instance caps (so sockets times subscriptions cannot multiply them), and is
    // given back when it ends, is unsubscribed or its socket closes.
    const subscription = new SocketSubscription(connection, randomUUID());
    subscription.release = this.engine.admission.sseStreams.open(context.principal, () => subscription.revoke());
    try {
      subscription.stream = await openTaskStream(this.engine, context.principal, start, undefined, subscription);
    } catch (error) {
      subscription.release();
      throw error;
    }
    if (subscription.ended) subscription.release();
    else connection.subscriptions.set(subscription.id, subscription);
    return subscription;
  }

  /** A ping per heartbeat; a peer that did not answer the previous one is gone. */
  /**
   * A token expires and a key or link can be revoked while a socket stays open: the credentials
   * are checked again, and a socket whose credentials no longer hold is closed (1008).
   */
  private async stillAuthenticated(connection: Connection, payload?: unknown): Promise<boolean> {
    try {
      connection.principal = await authenticateHeaders(this.engine, connection.credentials);
      return true;
    } catch (error) {
      const id = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? ((payload as { id?: string | number }).id ?? null) : null;
      this.closeForCredentials(connection, error, id);
      return false;
    }
  }

  /** The socket's credentials no longer hold: the error first, then a close its client understands (1008). */
  private closeForCredentials(connection: Connection, error: unknown, id: string | number | null = null) {
    send(connection, errorResponse(id, toRpcError(error, this.log)));
    connection.socket.close(1008, 'credentials are no longer valid');
    // A peer that does not answer the close keeps nothing of a credential that no longer holds.
    setTimeout(() => connection.socket.terminate(), limits.webSocketCloseGraceMs).unref();
  }

  /** Every call counts against the credential's JSON-RPC bucket, a batch as its length (as over HTTP). */
  private async withinRateLimit(connection: Connection, payload: unknown): Promise<boolean> {
    try {
      const calls = Array.isArray(payload) ? Math.max(1, payload.length) : 1;
      await this.engine.admission.consume(
        ['rpcCallsPerCredential', 'rpcCallsPerApiKey'],
        { address: connection.address, principal: connection.principal },
        calls,
      );
      return true;
    } catch (error) {
      send(connection, errorResponse(Array.isArray(payload) ? null : idOf(payload), toRpcError(error, this.log)));
      return false;
    }
  }

  private beat() {
    for (const connection of this.connections) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      void this.stillAuthenticated(connection);
      connection.alive = false;
      connection.socket.ping();
    }
  }

  /** Graceful shutdown: no new upgrades, every socket closed (1001), forced after a short wait. */
  async close() {
    this.server.off('upgrade', this.onUpgrade);
    clearInterval(this.heartbeat);
    const closed = [...this.connections].map(
      (connection) =>
        new Promise<void>((resolve) => {
          if (connection.socket.readyState === WebSocket.CLOSED) return resolve();
          connection.socket.once('close', () => resolve());
          connection.socket.close(1001, 'server shutting down');
        }),
    );
    const forced = setTimeout(() => {
      for (const connection of this.connections) connection.socket.terminate();
    }, closeWaitMs);
    forced.unref();
    await Promise.all(closed);
    clearTimeout(forced);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

export function attachWebSocket(server: Server, engine: Engine, dispatcher: Dispatcher): { close(): Promise<void> } {
  const sockets = new RpcSockets(server, engine, dispatcher);
  return { close: () => sockets.close() };
}
