import type { Request } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  type GetPromptResult,
  type JSONRPCRequest,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type ServerResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { requestLogger } from '../rest/request-log.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { errorBody, toAppError } from '../src/errors.ts';
import { assertSafeJson } from '../src/schemas/json-safety.ts';
import { validationError } from '../src/schemas/validation.ts';
import { mcpPrompts, promptArgumentLengthMax } from './prompts.ts';
import { mcpResources } from './resources.ts';
import { inputJsonSchema, outputJsonSchema } from './schema.ts';
import type { McpTool } from './tools.ts';
import { withNullsLeftOut } from '../src/schemas/null-as-absent.ts';

export const serverInfo = { name: 'agent-marketplace', title: 'Agent Marketplace', version: '0.1.0' };

/** Not a marketplace error: an MCP "resource not found" (the spec's -32002), answered as a protocol error. */
const resourceNotFound = -32002;

/**
 * A JSON-RPC error as this server sends it. The SDK answers a thrown error with its `code`,
 * `message` and `data`; its own McpError writes "MCP error <code>: " into the message, which the
 * client's McpError writes again ("MCP error -32602: MCP error -32602: ..."). This one carries the
 * message alone, so a client shows it once.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'ProtocolError';
  }
}

interface Issue {
  path: PropertyKey[];
  code: string;
  expected?: string;
  message: string;
}

/** "params.arguments must be an object": the first problem of a request's params, short, instead of the validator's dump. */
function invalidParams(issues: readonly Issue[]): ProtocolError {
  const [issue] = issues;
  const where = issue && issue.path.length > 0 ? issue.path.map(String).join('.') : 'params';
  const expected = issue?.expected === 'record' || issue?.expected === 'object' ? 'an object' : issue?.expected ? `a ${issue.expected}` : undefined;
  const what = issue?.code === 'invalid_type' && expected ? `must be ${expected}` : (issue?.message ?? 'is not valid');
  return new ProtocolError(ErrorCode.InvalidParams, `invalid params: ${where} ${what}`);
}

/** The SDK's request schemas, used to read params only (their `safeParse`); a failure is -32602 with a short message. */
interface RequestSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: readonly Issue[] } };
}
function paramsOf<T>(schema: RequestSchema<T>, request: JSONRPCRequest): T {
  const parsed = schema.safeParse(request);
  if (!parsed.success) throw invalidParams(parsed.error.issues);
  return parsed.data;
}

/**
 * One MCP server for one HTTP request, acting for the principal its credentials named.
 *
 * This uses the SDK's low-level `Server` rather than `McpServer.registerTool`: McpServer parses
 * tool arguments itself and answers a failure with a free-text message, while every facade of
 * this service answers bad input with the envelope (4000, `data.errors[{path, message}]`). Here
 * the arguments are parsed with the tool's zod schema exactly as rest/route.ts parses a body.
 *
 * The methods are served by one dispatcher (the SDK's `fallbackRequestHandler`, called for every
 * method without a handler of its own: all but initialize and ping) rather than
 * `setRequestHandler`: the SDK parses a request for a registered handler before the handler runs,
 * and answers a malformed one (`"arguments": 5`) with -32603 and the validator's dump. Here params
 * are read by the same SDK schemas, and a malformed request is -32602 with one short sentence.
 */
export function createMcpServer(engine: Engine, principal: Principal, tools: readonly McpTool[], request: Request): Server {
  const server = new Server(serverInfo, {
    capabilities: { tools: {}, resources: {}, prompts: {} },
    instructions:
      'Agent Marketplace. Read marketplace://categories for what is offered in your space, marketplace://wallet for your balance and ' +
      'marketplace://transactions/open for what waits on you. To get a job done: create_demand then match_capabilities (or ' +
      'search_capabilities), then buy_capability with max_price and an idempotency_key, follow it with get_transaction and ' +
      'confirm_transaction once delivered. To have people or agents apply: publish_task, then accept_application. The tools whose ' +
      'description starts with SPENDS MONEY move money: pass a price ceiling and an idempotency_key, and reuse the key to retry. ' +
      'Amounts are decimal strings ("12.50"). The prompts find_and_buy_capability and publish_task walk through both journeys.',
  });
  const log = () => requestLogger(request, engine.dependencies.log);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const methods = new Map<string, (request: JSONRPCRequest) => Promise<ServerResult>>([
    [
      'tools/list',
      async (message) => {
        paramsOf(ListToolsRequestSchema, message);
        return { tools: listingOf(tools) };
      },
    ],
    [
      'tools/call',
      async (message) => {
        const { params } = paramsOf(CallToolRequestSchema, message);
        const tool = byName.get(params.name);
        // An unknown tool is a protocol error (the MCP spec's -32602), not a failed call of a tool.
        if (!tool) throw new ProtocolError(ErrorCode.InvalidParams, `unknown tool: ${params.name}`);
        return callTool(engine, principal, tool, params.arguments ?? {}, request);
      },
    ],
    [
      'resources/list',
      async (message) => {
        paramsOf(ListResourcesRequestSchema, message);
        return { resources: mcpResources.map(({ uri, name, title, description, mimeType }) => ({ uri, name, title, description, mimeType })) };
      },
    ],
    [
      'resources/templates/list',
      async (message) => {
        paramsOf(ListResourceTemplatesRequestSchema, message);
        return { resourceTemplates: [] };
      },
    ],
    [
      'resources/read',
      async (message) => {
        const { params } = paramsOf(ReadResourceRequestSchema, message);
        const resource = mcpResources.find((candidate) => candidate.uri === params.uri);
        if (!resource) throw new ProtocolError(resourceNotFound, `unknown resource: ${params.uri}`, { uri: params.uri });
        try {
          const content = await resource.read(engine, principal);
          return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, text: JSON.stringify(content) }] };
        } catch (error) {
          // A thrown error's own message would be sent; a database error's text must not reach the client.
          const body = errorBody(toAppError(error, (message, cause) => log().error(message, { error: cause, resource: resource.uri })));
          throw new ProtocolError(ErrorCode.InternalError, body.message, body);
        }
      },
    ],
    [
      'prompts/list',
      async (message) => {
        paramsOf(ListPromptsRequestSchema, message);
        return { prompts: mcpPrompts.map(({ name, title, description, arguments: args }) => ({ name, title, description, arguments: args })) };
      },
    ],
    [
      'prompts/get',
      async (message) => {
        const { params } = paramsOf(GetPromptRequestSchema, message);
        return promptOf(params.name, params.arguments ?? {});
      },
    ],
  ]);
  server.fallbackRequestHandler = async (message) => {
    const handle = methods.get(message.method);
    if (!handle) throw new ProtocolError(ErrorCode.MethodNotFound, `method not found: ${message.method}`);
    return handle(message);
  };
  return server;
}

function promptOf(name: string, args: Record<string, string>): GetPromptResult {
  const prompt = mcpPrompts.find((candidate) => candidate.name === name);
  if (!prompt) throw new ProtocolError(ErrorCode.InvalidParams, `unknown prompt: ${name}`);
  const known = new Set(prompt.arguments.map((argument) => argument.name));
  const unknown = Object.keys(args).find((argument) => !known.has(argument));
  if (unknown !== undefined) throw new ProtocolError(ErrorCode.InvalidParams, `unknown argument of prompt ${name}: ${unknown}`);
  const missing = prompt.arguments.find((argument) => argument.required && !args[argument.name]?.trim());
  if (missing) throw new ProtocolError(ErrorCode.InvalidParams, `missing argument of prompt ${name}: ${missing.name}`);
  const tooLong = Object.entries(args).find(([, value]) => value.length > promptArgumentLengthMax);
  if (tooLong)
    throw new ProtocolError(ErrorCode.InvalidParams, `argument ${tooLong[0]} of prompt ${name} is longer than ${promptArgumentLengthMax} characters`);
  return { description: prompt.description, messages: [{ role: 'user', content: { type: 'text', text: prompt.text(args) } }] };
}

/**
 * A tool table's listing depends on nothing else, so its JSON Schemas are generated once per
 * table, not on every request (each request has a server of its own).
 */
const listings = new WeakMap<readonly McpTool[], Tool[]>();
export function listingOf(tools: readonly McpTool[]): Tool[] {
  let listing = listings.get(tools);
  if (!listing) {
    listing = tools.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: inputJsonSchema(tool.input) as Tool['inputSchema'],
      outputSchema: outputJsonSchema(tool.output) as Tool['outputSchema'],
      annotations: { title: tool.title, ...tool.annotations },
    }));
    listings.set(tools, listing);
  }
  return listing;
}

/**
 * A failure of the call itself (bad arguments, an engine refusal, an unexpected error) is a tool
 * result with `isError: true` whose text is the envelope's {code, message, data}, so a model can
 * read it and act (top up, fix an argument); the protocol exchange itself succeeds.
 *
 * Only a success carries `structuredContent` (which matches the tool's outputSchema). A failure
 * does not: the MCP SDK's client validates any structuredContent it receives against the tool's
 * outputSchema, isError or not, so an envelope there would turn every refusal into a client-side
 * "does not match the tool's output schema" and hide it. The envelope is the text content.
 */
async function callTool(engine: Engine, principal: Principal, tool: McpTool, args: unknown, request: Request): Promise<CallToolResult> {
  try {
    assertSafeJson(args, 'arguments');
    const parsed = tool.input.safeParse(tool.updates ? args : withNullsLeftOut(tool.input, args));
    if (!parsed.success) throw validationError(parsed.error, 'arguments', args);
    const data = (await tool.handler(engine, principal, parsed.data)) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
  } catch (error) {
    const log = requestLogger(request, engine.dependencies.log);
    const body = errorBody(toAppError(error, (message, cause) => log.error(message, { error: cause, tool: tool.name })));
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
  }
}
