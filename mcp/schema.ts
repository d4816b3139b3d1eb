import { z } from 'zod';

type JsonSchema = Record<string, unknown> & { $ref?: string; $defs?: Record<string, Record<string, unknown>> };

/**
 * A tool's input JSON Schema, generated from its zod schema by the generator that writes the
 * OpenAPI document (rest/openapi.ts), so MCP and REST publish the same constraints. MCP wants an
 * object schema at the top (`type: "object"`), while zod writes a named schema (`.meta({id})`)
 * as a `$ref` into `$defs`: the named root is inlined, other named parts stay in `$defs`.
 */
export function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const document = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  const { $ref, $defs, ...rest } = document;
  const rootName = $ref?.startsWith('#/$defs/') ? $ref.slice('#/$defs/'.length) : undefined;
  if (rootName === undefined || !$defs?.[rootName]) return document;
  const { [rootName]: root, ...others } = $defs;
  return { ...rest, ...root, ...(Object.keys(others).length > 0 ? { $defs: others } : {}) };
}
