import { z } from 'zod';

/**
 * Many client libraries send an optional field they have no value for as `null` (Jackson and
 * Gson by default, pydantic's `model_dump()`, hand-written JSON, and language models filling a
 * tool's arguments), and the specification shows most such fields as "or null" in the answers.
 * In a REST POST body, an MCP tool's arguments and an A2A data part, `null` for an optional field whose
 * schema has no meaning for `null` is taken as the field left out (docs/decisions/api-surface.md
 * "null for a field left out"). Where `null` does mean something (clearing `ut_price` on an
 * update, a reuse restating "no bounty") the field's schema accepts it and it is kept; `null` for
 * a required field is still 4000.
 */
export function nullMeansAbsent(schema: z.ZodType | undefined): ReadonlySet<string> {
  const shape = shapeOf(schema);
  const keys = new Set<string>();
  for (const [key, field] of Object.entries(shape ?? {})) {
    if (!field.safeParse(null).success && field.safeParse(undefined).success) keys.add(key);
  }
  return keys;
}

function shapeOf(schema: z.ZodType | undefined): Record<string, z.ZodType> | undefined {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, z.ZodType>;
  if (schema instanceof z.ZodPipe) return shapeOf(schema.in as z.ZodType);
  // An optional body (`{}` or nothing) has the same fields.
  if (schema instanceof z.ZodOptional) return shapeOf(schema.unwrap() as z.ZodType);
  return undefined;
}

/** `body` without the keys of `keys` that are null; the same object when there are none. */
export function withoutNulls(body: unknown, keys: ReadonlySet<string>): unknown {
  if (keys.size === 0 || body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  let copy: Record<string, unknown> | undefined;
  for (const key of keys) {
    if ((body as Record<string, unknown>)[key] !== null) continue;
    copy ??= { ...(body as Record<string, unknown>) };
    delete copy[key];
  }
  return copy ?? body;
}

const keysBySchema = new WeakMap<z.ZodType, ReadonlySet<string>>();

/** `value` as `schema` reads it with `null` for a field left out (nullMeansAbsent, worked out once per schema). */
export function withNullsLeftOut(schema: z.ZodType, value: unknown): unknown {
  let keys = keysBySchema.get(schema);
  if (keys === undefined) {
    keys = nullMeansAbsent(schema);
    keysBySchema.set(schema, keys);
  }
  return withoutNulls(value, keys);
}
