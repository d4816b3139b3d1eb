import type { Server } from 'node:http';
import { z } from 'zod';
import { type RouteSpec, handled, route } from '../rest/route.ts';
import type { Engine } from '../src/engine/index.ts';
import { cardRoutes, rpcPath } from './card.ts';
import { createDispatcher } from './dispatch.ts';
import { errorResponse, jsonRpcRefusal, toRpcError } from './errors.ts';
import { serveHttp } from './http.ts';
import { requestLogger } from '../rest/request-log.ts';
import { createRpcServer, streamingMethods } from './methods.ts';
import { renderPush } from './push.ts';
import { attachWebSocket } from './websocket.ts';

/**
 * The JSON-RPC (A2A) facade: HTTP routes (documented in OpenAPI like every other route) and the
 * WebSocket transport. The global JSON body parser skips /api/v1/rpc so this layer can answer
 * malformed JSON with a JSON-RPC parse error instead of the REST envelope.
 *
 * Layout: methods.ts (method table of the three generations), purchase.ts (messages -> engine
 * calls), shapes.ts (views -> Task shapes), tasks.ts (engine tasks -> Task shapes with history),
 * task-stream.ts (engine subscription -> task events),
 * dispatch.ts (JSON-RPC framing and batches), http.ts (POST + SSE), websocket.ts, card.ts.
 */
const rpcId = z.union([z.string(), z.number(), z.null()]);

const rpcRequest = z
  .object({ jsonrpc: z.literal('2.0'), method: z.string(), params: z.record(z.string(), z.unknown()).optional(), id: rpcId.optional() })
  .meta({
    id: 'JsonRpcRequest',
    description:
      'A2A methods: tasks/send, tasks/sendSubscribe, message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask, ListTasks; push notification configs: tasks/pushNotification/set|get, tasks/pushNotificationConfig/set|get|list|delete, CreateTaskPushNotificationConfig, GetTaskPushNotificationConfig, ListTaskPushNotificationConfigs, DeleteTaskPushNotificationConfig (docs/webhooks.md)',
  });

const rpcResponse = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: rpcId,
    result: z.unknown().optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .meta({ id: 'JsonRpcResponse', description: 'error.data carries the REST envelope {code, message, data} for marketplace errors' });

export function rpcRoutes(engine: Engine): RouteSpec[] {
  // A2A push bodies are this layer's shapes; the engine's sender asks for them when it sends.
  engine.webhooks.a2aPush.useRenderer(renderPush);
  const dispatcher = createDispatcher(createRpcServer(engine));
  const { log } = engine.dependencies;
  return [
    route({
      method: 'post',
      path: rpcPath,
      tag: 'a2a',
      auth: 'none',
      documentedAuth: 'user',
      rawResponse: {
        contentType: 'application/json',
        or: {
          contentType: 'text/event-stream',
          description: `A streaming method (${[...streamingMethods].join(', ')}): one JSON-RPC response per \`data:\` frame`,
        },
      },
      failureBody: jsonRpcRefusal,
      moreAnswers: { '204': { description: 'Only notifications (calls without an id) were sent: nothing to answer' } },
      // Limited in serveHttp, per call, and answered in JSON-RPC's own shape.
      rateLimits: [],
      errors: [4010, 4011, 4290],
      summary:
        'JSON-RPC 2.0 endpoint for A2A clients (single or batch; streaming methods answer as text/event-stream). ' +
        'Authenticates like REST: X-Api-Key + X-Platform-User-Id, or a bearer token',
      body: z.union([rpcRequest, z.array(rpcRequest)]).optional(),
      response: z.union([rpcResponse, z.array(rpcResponse)]),
      handler: async ({ request, response }) => {
        try {
          await serveHttp(engine, dispatcher, request, response);
        } catch (error) {
          if (!response.headersSent) response.status(200).json(errorResponse(null, toRpcError(error, requestLogger(request, log))));
          else response.end();
        }
        return handled;
      },
    }),
    ...cardRoutes(engine.dependencies.config),
  ];
}

export function attachRpcWebSocket(server: Server, engine: Engine): { close(): Promise<void> } {
  return attachWebSocket(server, engine, createDispatcher(createRpcServer(engine)));
}
