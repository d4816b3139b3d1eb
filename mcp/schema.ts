import { z } from 'zod';
import { amountInput } from '../src/schemas/money.ts';

type JsonSchema = Record<string, unknown> & { $ref?: string; $defs?: Record<string, Record<string, unknown>> };

/** What an amount argument looks like in the published schema: a decimal string (parsed by parseAmount, as REST does). */
export const amountPattern = '^\\d+(\\.\\d{1,2})?$';
const amountDescription = 'Decimal amount as a string, e.g. "12.50"; at most two fraction digits';

/**
 * The zod definition of an amount: `.meta()` clones a schema (a field's own description) but
 * keeps its definition, so this finds every amount however it was described.
 */
const amountDefinition = (amountInput as unknown as { _zod: { def: unknown } })._zod.def;
const definitionOf = (schema: z.core.$ZodType) => (schema as unknown as { _zod: { def: { type: string } } })._zod.def;

/**
 * A tool's input JSON Schema, generated from the zod schema its arguments are parsed with, by the
 * generator that writes the OpenAPI document (rest/openapi.ts), so MCP and REST publish the same
 * limits. MCP wants an object schema at the top (`type: "object"`), while zod writes a named
 * schema (`.meta({id})`) as a `$ref` into `$defs`: the named root is inlined, other named parts
 * stay in `$defs`.
 *
 * The published schema has no unions (`anyOf`, `oneOf`, a `type` array), which clients that map
 * tool schemas onto a single-type dialect reject or flatten (docs/mcp.md "Arguments"). The parser
 * stays REST's; only what is published is the union-free part of what it accepts:
 *  - an amount (amountInput: a number or a decimal string) is published as a decimal string;
 *  - a nullable argument (REST's way to clear a setting) is published as its non-null type (a
 *    tool that clears says how in its own arguments, e.g. update_skill's `clear`);
 *  - a union of strings (`"me"` or a user id) is published as one string with one pattern.
 */
export function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const document = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12', override: withoutUnions }) as JsonSchema;
  const { $ref, $defs, ...rest } = document;
  const rootName = $ref?.startsWith('#/$defs/') ? $ref.slice('#/$defs/'.length) : undefined;
  const inlined =
    rootName === undefined || !$defs?.[rootName]
      ? document
      : (() => {
          const { [rootName]: root, ...others } = $defs;
          return { ...rest, ...root, ...(Object.keys(others).length > 0 ? { $defs: others } : {}) };
        })();
  return freeFormObjectsAsTrue(inlined) as Record<string, unknown>;
}

/**
 * A tool's output JSON Schema, from the zod schema of what its handler returns (the REST route's
 * response schema where there is one). Self-contained: every named part is inlined (no `$ref`,
 * no `$defs`), and no `$schema`, so any JSON Schema validator compiles it as it is (the MCP SDK
 * client's Ajv is a draft-07 instance, which refuses a 2020-12 `$schema`); the keywords used mean
 * the same in draft-07 and 2020-12. Objects stay open (no `additionalProperties: false`), so a
 * field added to an answer later does not break a client that validates. A nullable is written
 * as `anyOf` branches of one type each, never as a type array (the Inspector's portability rule).
 */
export function outputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const document = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12', reused: 'inline' }) as JsonSchema;
  const { $schema: _dialect, $defs = {}, ...root } = document;
  const inline = (node: unknown, depth = 0): unknown => {
    if (depth > 64) throw new Error('output schema nested too deep (a cycle?)');
    if (Array.isArray(node)) return node.map((item) => inline(item, depth + 1));
    if (node === null || typeof node !== 'object') return node;
    const { $ref, additionalProperties, type, ...rest } = node as JsonSchema & { additionalProperties?: unknown; type?: unknown };
    // zod writes a simple nullable as a type array (["string", "null"]), which single-type dialects cannot read: branches instead.
    if (Array.isArray(type)) rest.anyOf = type.map((name) => ({ type: name }));
    else if (type !== undefined) rest.type = type;
    const target = $ref?.startsWith('#/$defs/') ? $defs[$ref.slice('#/$defs/'.length)] : undefined;
    const merged: Record<string, unknown> = target ? { ...(inline(target, depth + 1) as object), ...rest } : { ...rest };
    // zod closes an output object (`additionalProperties: false`); published, it stays open.
    if (additionalProperties !== undefined && additionalProperties !== false) merged.additionalProperties = inline(additionalProperties, depth + 1);
    for (const [key, value] of Object.entries(merged)) {
      if (key === 'properties' || key === 'patternProperties') {
        merged[key] = Object.fromEntries(Object.entries(value as object).map(([name, schema]) => [name, inline(schema, depth + 1)]));
      } else if (['items', 'anyOf', 'oneOf', 'allOf', 'not', 'prefixItems', 'propertyNames', 'contains'].includes(key)) {
        merged[key] = inline(value, depth + 1);
      }
    }
    return merged;
  };
  return freeFormObjectsAsTrue(inline(root)) as Record<string, unknown>;
}

/** zod's rewriting of the parts that would be unions, applied while the schema is generated. */
function withoutUnions({ zodSchema, jsonSchema }: { zodSchema: z.core.$ZodType; jsonSchema: z.core.JSONSchema.BaseSchema }) {
  const definition = definitionOf(zodSchema);
  const target = jsonSchema as Record<string, unknown>;
  if ((definition as unknown) === amountDefinition) {
    const own = typeof target.description === 'string' && target.description !== (amountInput.meta()?.description ?? '') ? `${target.description}. ` : '';
    delete target.anyOf;
    delete target.type;
    Object.assign(target, { type: 'string', pattern: amountPattern, description: `${own}${amountDescription}`, examples: ['12.50'] });
    return;
  }
  const branches = target.anyOf as Record<string, unknown>[] | undefined;
  if (!Array.isArray(branches)) return;
  if (definition.type === 'nullable') {
    const [inner] = branches.filter((branch) => branch.type !== 'null');
    delete target.anyOf;
    Object.assign(target, { ...inner, ...target });
    return;
  }
  if (
    definition.type === 'union' &&
    branches.every((branch) => branch.type === 'string' && (typeof branch.const === 'string' || typeof branch.pattern === 'string'))
  ) {
    const alternatives = branches.map((branch) =>
      typeof branch.const === 'string' ? branch.const.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : (branch.pattern as string).replace(/^\^/, '').replace(/\$$/, ''),
    );
    delete target.anyOf;
    Object.assign(target, { type: 'string', pattern: `^(?:${alternatives.join('|')})$` });
  }
}

/**
 * zod writes "any JSON value" (`z.unknown()`) as `{}`; under `additionalProperties` (a free-form
 * object, such as a transaction's input) JSON Schema's own spelling is `true`, which clients read
 * as "any properties" instead of "a schema that says nothing" (the Inspector warns on `{}`).
 */
function freeFormObjectsAsTrue(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(freeFormObjectsAsTrue);
  if (node === null || typeof node !== 'object') return node;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    const empty = value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0;
    if (key === 'additionalProperties' && empty) result[key] = true;
    else if (key === 'propertyNames' && JSON.stringify(value) === '{"type":"string"}')
      continue; // every JSON property name is a string
    else result[key] = key === 'const' || key === 'enum' || key === 'examples' || key === 'default' ? value : freeFormObjectsAsTrue(value);
  }
  return result;
}
