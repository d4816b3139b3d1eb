import type { Request } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema, type CallToolResult, ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, McpError, ReadResourceRequestSchema, type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { requestLogger } from '../rest/request-log.ts';
import type { Principal } from '../src/engine/dependencies.ts';
import type { Engine } from '../src/engine/index.ts';
import { errorBody, toAppError } from '../src/errors.ts';
import { assertSafeJson } from '../src/schemas/json-safety.ts';
import { validationError } from '../src/schemas/validation.ts';
import { mcpResources } from './resources.ts';
import { inputJsonSchema } from './schema.ts';
import type { McpTool } from './tools.ts';

export const serverInfo = { name: 'agent-marketplace', version: '0.1.0' };

/** Not a marketplace error: an MCP "resource not found" (the spec's -32002), answered as a protocol error. */
const resourceNotFound = -32002;

/**
 * One MCP server for one HTTP request, acting for the principal its credentials named.
 *
 * This uses the SDK's low-level `Server` rather than `McpServer.registerTool`: McpServer parses
 * tool arguments itself and answers a failure with a free-text message, while every facade of
 * this service answers bad input with the envelope (4000, `data.errors[{path, message}]`). Here
 * the arguments are parsed with the shared zod schema exactly as rest/route.ts parses a body.
 */
export function createMcpServer(engine: Engine, principal: Principal, tools: readonly McpTool[], request: Request): Server {
  const server = new Server(serverInfo, {
    capabilities: { tools: {}, resources: {} },
    instructions:
      'Agent Marketplace: read marketplace://categories for what is offered in your space; search capabilities, or create a demand and match it; ' +
      'then buy a capability and follow the transaction with the tools.',
  });
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listingOf(tools) }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    const tool = byName.get(params.name);
    // An unknown tool is a protocol error (the MCP spec's -32602), not a failed call of a tool.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${params.name}`);
    return callTool(engine, principal, tool, params.arguments ?? {}, request);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: mcpResources.map(({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async ({ params }) => {
    const resource = mcpResources.find((candidate) => candidate.uri === params.uri);
    if (!resource) throw new McpError(resourceNotFound, `unknown resource: ${params.uri}`, { uri: params.uri });
    try {
      const content = await resource.read(engine, principal);
      return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, text: JSON.stringify(content) }] };
    } catch (error) {
      // The SDK would send a thrown error's own message; a database error's text must not reach the client.
      const body = errorBody(toAppError(error, (message, cause) => requestLogger(request, engine.dependencies.log).error(message, { error: cause, resource: resource.uri })));
      throw new McpError(ErrorCode.InternalError, body.message, body);
    }
  });
  return server;
}

/**
 * A tool table's listing depends on nothing else, so its JSON Schemas are generated once per
 * table, not on every request (each request has a server of its own).
 */
const listings = new WeakMap<readonly McpTool[], Tool[]>();
function listingOf(tools: readonly McpTool[]): Tool[] {
  let listing = listings.get(tools);
  if (!listing) {
    listing = tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: inputJsonSchema(tool.input) as Tool['inputSchema'] }));
    listings.set(tools, listing);
  }
  return listing;
}

/**
 * A failure of the call itself (bad arguments, an engine refusal, an unexpected error) is a tool
 * result with `isError: true` whose text is the envelope's {code, message, data}, so a model can
 * read it and act (top up, fix an argument); the protocol exchange itself succeeds.
 */
async function callTool(engine: Engine, principal: Principal, tool: McpTool, args: unknown, request: Request): Promise<CallToolResult> {
  try {
    assertSafeJson(args, 'arguments');
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) throw validationError(parsed.error, 'arguments', args);
    const data = (await tool.handler(engine, principal, parsed.data)) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
  } catch (error) {
    const log = requestLogger(request, engine.dependencies.log);
    const body = errorBody(toAppError(error, (message, cause) => log.error(message, { error: cause, tool: tool.name })));
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { ...body } };
  }
}
