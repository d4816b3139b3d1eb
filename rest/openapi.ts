import { z } from 'zod';
import { webhookEntries } from './openapi-webhooks.ts';
import { errorTable } from '../src/errors.ts';
import { limits } from '../src/limits.ts';
import { envelope, errorEnvelope } from '../src/schemas/common.ts';
import { type RouteSpec, rateLimitsOf } from './route.ts';

/**
 * Builds the OpenAPI 3.1 document from the same route table and zod schemas that validate
 * requests. Named schemas (`.meta({id})`) are hoisted into components.
 */
type JsonSchema = Record<string, unknown>;

const codesByAuth: Record<RouteSpec['auth'], number[]> = {
  none: [],
  user: [4010, 4011],
  agent: [4010, 4011, 4030],
  human: [4010, 4011, 4030],
  admin: [4010],
};

export function buildOpenApiDocument(routes: RouteSpec[], serverUrl: string) {
  const components: Record<string, JsonSchema> = {};
  const convert = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
    const rewritten = JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/')) as JsonSchema;
    const { $defs, $schema: _ignored, ...rest } = rewritten as JsonSchema & { $defs?: Record<string, JsonSchema> };
    Object.assign(components, $defs ?? {});
    return rest;
  };
  convert(errorEnvelope, 'output'); // registers ErrorEnvelope in components through its id

  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of routes) {
    const openApiPath = spec.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    paths[openApiPath] ??= {};
    paths[openApiPath][spec.method] = operation(spec, convert);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Marketplace API',
      version: '1.0.0',
      description: 'Marketplace where AI agents and humans buy and sell work. Every JSON response is the envelope {code, message, data, timestamp}.',
    },
    servers: [{ url: serverUrl }],
    components: {
      schemas: components,
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'Platform API key; send X-Platform-User-Id with it (caller_type agent).' },
        platformUserId: { type: 'apiKey', in: 'header', name: 'X-Platform-User-Id', description: 'The user the API key acts for.' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Human access token (caller_type human).' },
        adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Token' },
      },
    },
    paths,
    webhooks: webhookEntries(convert),
  };
}

/** Declared on every operation that honours a key (the route table's `idempotent`). */
const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Retry-safe key (1 to 64 printable ASCII characters; or `idempotency_key` in the body, which must then be the same). The same key and request within 24 hours answers the first outcome again without a second effect; the same key with another request is 4220; while the first is still running, 4091. Agent callers must send one on purchases and invoke.',
  schema: { type: 'string', minLength: 1, maxLength: limits.idempotencyKeyLengthMax, pattern: '^[\\x21-\\x7e]+$' },
};

function operation(spec: RouteSpec, convert: (schema: z.ZodType, io: 'input' | 'output') => JsonSchema) {
  const parameters = [
    ...objectParameters(spec.params, 'path', convert),
    ...objectParameters(spec.query, 'query', convert),
    ...(spec.idempotent ? [idempotencyKeyParameter] : []),
  ];
  const successContent = spec.rawResponse
    ? {
        [spec.rawResponse.contentType]: { schema: convert(spec.response, 'output') },
        ...(spec.rawResponse.or ? { [spec.rawResponse.or.contentType]: { schema: { type: 'string', description: spec.rawResponse.or.description } } } : {}),
      }
    : { 'application/json': { schema: convert(envelope(spec.response), 'output') } };
  const successStatus = String(spec.successStatus ?? 200);
  const responses: Record<string, unknown> = { [successStatus]: { description: 'success', content: successContent } };
  const errorSchema = spec.failureBody ? convert(spec.failureBody, 'output') : { $ref: '#/components/schemas/ErrorEnvelope' };
  for (const [status, { description, failure }] of Object.entries(spec.moreAnswers ?? {}))
    responses[status] = failure ? { description, content: { 'application/json': { schema: errorSchema } } } : { description };
  // Any request that carries a JSON body is parsed before it is routed, whether the operation
  // reads one or not: malformed JSON (4001) or too much of it (4130) can be the answer of any.
  // Any may find PostgreSQL or Redis unreachable: 5030 with Retry-After (src/dependency-failures.ts).
  const failureCodes = new Set([
    ...(spec.body || spec.query || spec.params ? [4000] : []),
    4001,
    4130,
    ...codesByAuth[spec.auth],
    ...(spec.errors ?? []),
    ...(rateLimitsOf(spec).length > 0 ? [4290] : []),
    5000,
    5030,
  ]);
  for (const code of failureCodes) {
    const entry = Object.entries(errorTable).find(([, row]) => row.code === code);
    if (!entry) continue;
    const status = String(entry[1].httpStatus);
    const existing = responses[status] as { description: string } | undefined;
    // A failure answered with the success status (the device poll's 4801 and 4802 are HTTP 200)
    // keeps the success schema beside the error envelope.
    const sharesSuccess = status === successStatus && !spec.rawResponse;
    responses[status] = {
      description: existing ? `${existing.description}, ${code} ${entry[0]}` : `${code} ${entry[0]}`,
      content: { 'application/json': { schema: sharesSuccess ? { oneOf: [successContent['application/json']!.schema, errorSchema] } : errorSchema } },
    };
  }
  return {
    summary: spec.summary,
    tags: [spec.tag],
    operationId: operationIdOf(spec),
    security: securityFor(spec.documentedAuth ?? spec.auth),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: convert(spec.body, 'input') } } } } : {}),
    responses,
  };
}

/** `post /api/v1/auth/signup` -> `postApiV1AuthSignup`; a trailing slash stays distinguishable. */
function operationIdOf(spec: RouteSpec): string {
  const camel = spec.path.replace(/[^A-Za-z0-9]+(.)?/g, (_match, next: string | undefined) => (next ?? '').toUpperCase());
  return `${spec.method}${camel}${spec.path.endsWith('/') ? 'TrailingSlash' : ''}`;
}

function securityFor(auth: RouteSpec['auth']) {
  switch (auth) {
    case 'none':
      return [];
    case 'admin':
      return [{ adminToken: [] }];
    case 'agent':
      return [{ apiKey: [], platformUserId: [] }];
    case 'human':
      return [{ bearer: [] }];
    case 'user':
      return [{ apiKey: [], platformUserId: [] }, { bearer: [] }];
  }
}

function objectParameters(schema: z.ZodType | undefined, location: 'path' | 'query', convert: (schema: z.ZodType, io: 'input') => JsonSchema) {
  if (!schema) return [];
  const json = convert(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path' || (json.required ?? []).includes(name),
    schema: property,
  }));
}
