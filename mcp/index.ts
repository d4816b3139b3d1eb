import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Request, Response } from 'express';
import { z } from 'zod';
import { sendJson, sendRetryAfter } from '../rest/envelope.ts';
import { requestLogger } from '../rest/request-log.ts';
import { type RouteSpec, clientAddress, handled, route } from '../rest/route.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { idOf } from '../rpc/dispatch.ts';
import { exchangeRefusal, jsonRpcRefusal } from '../rpc/errors.ts';
import { mcpAuthenticator } from './authentication.ts';
import { createMcpServer } from './server.ts';
import { type McpTool, mcpTools } from './tools.ts';

export const mcpPath = '/mcp';

/**
 * The MCP server (Streamable HTTP), a thin adapter like rest/ and rpc/: tools.ts (the tool
 * table), resources.ts (marketplace:// resources), server.ts (MCP handlers, argument parsing,
 * tool errors), schema.ts (zod -> JSON Schema).
 *
 * Stateless: every POST gets a new server and transport (`sessionIdGenerator: undefined`) and
 * nothing is kept between requests, so any instance behind a load balancer can answer any
 * request, and the credentials are checked on every request rather than trusted for a session.
 * With no session there is no server-to-client stream: GET and DELETE on /mcp answer 405 with
 * `Allow: POST` (the router's method check), as the MCP spec allows, and answers are plain JSON.
 *
 * Credentials and rate limits are REST's: the route authenticates with the shared authenticator,
 * then each message takes a token from the read buckets, or from the write buckets when it calls
 * a tool that changes state. A refusal of either is answered by refuse() below.
 */
export function mcpRoutes(engine: Engine, tools: readonly McpTool[] = mcpTools): RouteSpec[] {
  const authenticate = mcpAuthenticator(engine);
  return [
    route({
      // Authenticated in the handler (mcp/authentication.ts): the answers to missing or wrong
      // credentials are the MCP authorization specification's, not REST's.
      method: 'post',
      path: mcpPath,
      tag: 'mcp',
      auth: 'none',
      documentedAuth: 'user',
      rawResponse: { contentType: 'application/json' },
      failureBody: jsonRpcRefusal,
      moreAnswers: {
        '202': { description: 'The message was a notification or a response: accepted, nothing to answer' },
        '406': { description: 'Accept does not name both application/json and text/event-stream', failure: true },
        '415': { description: 'The body is not application/json', failure: true },
      },
      // Limited in the handler, per message, by what each message does.
      rateLimits: [],
      errors: [4010, 4011, 4012, 4290],
      summary:
        'Model Context Protocol endpoint (Streamable HTTP, stateless; docs/mcp.md). An OAuth 2.1 protected resource: ' +
        'MCP clients sign in from the 401 challenge (/.well-known/oauth-protected-resource/mcp); automation may send ' +
        'X-Api-Key + X-Platform-User-Id (wrong ones answer 403, code 4012), or a bearer token. A refusal (401, 403, 400, 429) is a ' +
        'JSON-RPC error response whose data is the envelope. Send Accept: application/json, text/event-stream',
      body: z.record(z.string(), z.unknown()).meta({ description: 'One JSON-RPC 2.0 message of the MCP protocol' }),
      response: z.record(z.string(), z.unknown()),
      handler: async ({ request, response }) => {
        let principal: Principal;
        try {
          principal = await authenticate(request, response);
          await admit(engine, tools, request, principal);
        } catch (error) {
          return refuse(engine, request, response, error);
        }
        const server = createMcpServer(engine, principal, tools, request);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        response.on('close', () => {
          void transport.close();
          void server.close();
        });
        try {
          await server.connect(transport);
          await transport.handleRequest(request, response, request.body);
        } catch (error) {
          // Before the answer started, the envelope says what went wrong; after, the answer can only be cut short.
          if (!response.headersSent) throw error;
          requestLogger(request, engine.dependencies.log).error('MCP answer failed midway', { error });
          response.end();
        }
        return handled;
      },
    }),
  ];
}

/**
 * A refusal before the transport reads the message (credentials, rate limits) keeps its HTTP status
 * and headers (WWW-Authenticate, Retry-After) and its body is a JSON-RPC error response, which the
 * MCP transport allows at an error status: the Python SDK reads nothing else from a non-2xx body
 * (it showed "Server returned an error response" for an unknown API key). `data` is the
 * marketplace envelope `{code, message, data}`, so 4010 / 4011 / 4012 / 4290 are still there.
 */
export function refuse(engine: Engine, request: Request, response: Response, error: unknown) {
  const { refusal, body } = exchangeRefusal(error, idOf(request.body), requestLogger(request, engine.dependencies.log), 'mcp');
  sendRetryAfter(response, refusal);
  sendJson(response, refusal.httpStatus, body);
  return handled;
}

/** REST counts a GET as a read and a POST as a write; MCP counts a state-changing tool call as a write. */
async function admit(engine: Engine, tools: readonly McpTool[], request: Request, principal: Principal) {
  const message = request.body as { method?: unknown; params?: { name?: unknown } };
  const writes = message.method === 'tools/call' && tools.some((tool) => tool.writes && tool.name === message.params?.name);
  const requester = { address: clientAddress(request), principal };
  await engine.admission.consume(writes ? ['writesPerCredential', 'writesPerApiKey'] : ['readsPerCredential', 'readsPerApiKey'], requester);
}
