import fc from 'fast-check';

/**
 * fast-check arbitraries from the JSON Schemas of the served OpenAPI document (the keywords it
 * uses: type, properties, required, additionalProperties, propertyNames, items, minItems,
 * maxItems, enum, const, anyOf, oneOf, format, pattern, minLength, maxLength, minimum, maximum,
 * $ref), so that the fuzzer needs no hand-written generator per route. Sizes are kept small:
 * the values are to reach the code, not to be large (large inputs are `nastyValue`'s job).
 */
export type Schema = Record<string, any>;

const textMax = 40;

export function arbitraryOf(schema: Schema, components: Record<string, Schema>, depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref) return arbitraryOf(components[String(schema.$ref).split('/').pop()!]!, components, depth);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const choices = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (choices) return fc.oneof(...choices.map((choice) => arbitraryOf(choice, components, depth)));
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  if (types.length > 1) return fc.oneof(...types.map((type) => arbitraryOf({ ...schema, type }, components, depth)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({
        min: Math.max(schema.minimum ?? -1_000_000, Number.MIN_SAFE_INTEGER),
        max: Math.min(schema.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER),
      });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'string':
      return stringOf(schema);
    case 'array': {
      const items = schema.items ? arbitraryOf(schema.items as Schema, components, depth + 1) : fc.jsonValue({ maxDepth: 1 });
      return fc.array(items, { minLength: schema.minItems ?? 0, maxLength: Math.max(schema.minItems ?? 0, Math.min(schema.maxItems ?? 3, 3)) });
    }
    case 'object':
      return objectOf(schema, components, depth);
    case undefined:
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const minLength = schema.minLength ?? 0;
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? textMax, textMax));
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date-time')
    return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((date) => date.toISOString());
  if (schema.pattern) {
    return fc.stringMatching(new RegExp(schema.pattern as string)).filter((text) => text.length >= minLength && text.length <= (schema.maxLength ?? Infinity));
  }
  return fc.string({ minLength, maxLength, unit: 'grapheme' });
}

function objectOf(schema: Schema, components: Record<string, Schema>, depth: number): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required ?? []) as string[]);
  if (Object.keys(properties).length === 0 && schema.additionalProperties && typeof schema.additionalProperties === 'object' && depth < 3) {
    return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), arbitraryOf(schema.additionalProperties as Schema, components, depth + 1), { maxKeys: 3 });
  }
  const record = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [name, depth < 4 ? arbitraryOf(property, components, depth + 1) : fc.constant(null)]),
  );
  return fc.record(record, { requiredKeys: [...required].filter((name) => name in properties) });
}

/** Values no schema asks for: wrong types, edges of numbers, text that breaks naive code. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '\uD800',
    'a\uDFFFb',
    'nul\u0000byte',
    '\u202Eright-to-left',
    '𝕏🏳️‍🌈',
    '١٢٣',
    ' ',
    '',
    "'; DROP TABLE users; --",
    '../../etc/passwd',
    '<script>alert(1)</script>',
    -1,
    0,
    -0.5,
    1e308,
    -1e308,
    2 ** 53 + 1,
    1.0000000001,
    true,
    false,
    null,
    [],
    {},
    [[[]]],
    { '': null },
    '00000000-0000-0000-0000-000000000000',
    'NaN',
    '1e999',
  ),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.constant('x'.repeat(100_000)),
  fc.constant('é'.repeat(20_000)),
  fc.jsonValue({ maxDepth: 3 }),
);

/** An invalid variant of a valid object: a field dropped, added, or given a nasty value; or not an object at all. */
export function mutatedBody(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.tuple(valid, fc.nat()).map(([value, index]) => {
      if (!isObject(value)) return value;
      const keys = Object.keys(value);
      if (keys.length === 0) return { unexpected: true };
      const { [keys[index % keys.length]!]: _dropped, ...rest } = value;
      return rest;
    }),
    fc
      .tuple(valid, fc.string({ minLength: 1, maxLength: 12 }), nastyValue)
      .map(([value, key, nasty]) => (isObject(value) ? { ...value, [key]: nasty } : value)),
    fc.tuple(valid, fc.nat(), nastyValue).map(([value, index, nasty]) => {
      if (!isObject(value)) return nasty;
      const keys = Object.keys(value);
      return keys.length === 0 ? { field: nasty } : { ...value, [keys[index % keys.length]!]: nasty };
    }),
    nastyValue,
  );
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** JSON text nested `depth` levels deep, built as text (JSON.stringify of it would overflow the stack). */
export const deeplyNested = (depth: number) => `${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`;
