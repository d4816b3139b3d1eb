import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** An MCP client from the official SDK, connected (initialized) to `${baseUrl}/mcp` with these headers. */
export async function connectMcp(baseUrl: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'marketplace-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers } }));
  return client;
}

export interface ToolOutcome {
  isError: boolean;
  data: Record<string, any>;
}

/** Calls a tool and reads its JSON answer: the result on success, the envelope's {code, message, data} on failure. */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const [first] = result.content;
  if (first?.type !== 'text') throw new Error(`tool ${name} answered without text content`);
  const data = JSON.parse(first.text) as Record<string, any>;
  // The text and the structured content carry the same JSON.
  if (result.structuredContent) expectSame(result.structuredContent, data);
  return { isError: result.isError === true, data };
}

function expectSame(structured: unknown, parsed: unknown) {
  if (JSON.stringify(structured) !== JSON.stringify(parsed)) throw new Error('structuredContent differs from the text content');
}
