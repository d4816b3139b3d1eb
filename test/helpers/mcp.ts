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

type JsonSchema = Record<string, any>;

/** A JSON Schema holds a union where it has anyOf, oneOf or a type array, at any depth. */
export function unionsIn(schema: unknown, path = ''): string[] {
  if (Array.isArray(schema)) return schema.flatMap((item, index) => unionsIn(item, `${path}[${index}]`));
  if (schema === null || typeof schema !== 'object') return [];
  const node = schema as JsonSchema;
  const own = [
    ...['anyOf', 'oneOf'].filter((key) => key in node).map((key) => `${path || '/'} ${key}`),
    ...(Array.isArray(node.type) ? [`${path || '/'} type ${JSON.stringify(node.type)}`] : []),
  ];
  return [
    ...own,
    ...Object.entries(node)
      .filter(([key]) => !['enum', 'const', 'examples', 'default'].includes(key))
      .flatMap(([key, value]) => unionsIn(value, `${path}/${key}`)),
  ];
}

/**
 * An MCP tool's argument properties against the REST schema's (the OpenAPI document's): the same
 * names, and the same schema where REST's has no union; a REST amount (a number or a string) is a
 * decimal string here, a REST nullable its non-null type, and a free-form object says
 * `additionalProperties: true`.
 */
export function expectSameAsRest(mcp: Record<string, JsonSchema>, rest: Record<string, JsonSchema>) {
  if (JSON.stringify(Object.keys(mcp).sort()) !== JSON.stringify(Object.keys(rest).sort()))
    throw new Error(`different arguments: ${Object.keys(mcp).join(',')} / ${Object.keys(rest).join(',')}`);
  for (const [name, restProperty] of Object.entries(rest)) {
    const property = mcp[name]!;
    const sameAs = (expected: unknown) => {
      if (JSON.stringify(sortKeys(property)) !== JSON.stringify(sortKeys(expected)))
        throw new Error(`${name}: ${JSON.stringify(property)} differs from ${JSON.stringify(expected)}`);
    };
    if (JSON.stringify(restProperty.type) === '["string","number"]') {
      if (property.type !== 'string' || property.pattern !== '^\\d+(\\.\\d{1,2})?$')
        throw new Error(`${name}: an amount is published as ${JSON.stringify(property)}`);
    } else if (Array.isArray(restProperty.anyOf)) {
      if (property.type !== 'string' || unionsIn(property).length > 0) throw new Error(`${name}: ${JSON.stringify(property)}`);
    } else if (restProperty.type === 'object' && restProperty.additionalProperties !== undefined && restProperty.additionalProperties !== false) {
      const { propertyNames: _names, additionalProperties: _any, ...others } = restProperty;
      sameAs({ ...others, additionalProperties: true });
    } else {
      sameAs(restProperty);
    }
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, item]) => [key, sortKeys(item)]),
  );
}
