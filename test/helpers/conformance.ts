import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import supertest from 'supertest';

/**
 * Every answer a test gets through `test.http` is held against the served OpenAPI document: the
 * status must be one the operation declares, and a JSON body must match the schema declared for
 * that status. A client generated from the document (openapi-typescript, openapi-generator) or a
 * response validator trusts exactly this; the whole suite's thousands of requests check it.
 */
type Document = { paths: Record<string, Record<string, Operation>> };
type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const documentId = 'openapi.json';

/** An Ajv (JSON Schema 2020-12, formats) holding `served`, whose schemas schemaRef() names. */
export function documentAjv(served: object) {
  const validator = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  validator.addSchema({ ...served, $id: documentId });
  return validator;
}

/** `{$ref}` to the schema at `parts` of the document (`['paths', '/api/v1/x', 'get', ...]`). */
export const schemaRef = (parts: string[]) => ({
  $ref: `${documentId}#/${parts.map((part) => encodeURIComponent(part.replaceAll('~', '~0').replaceAll('/', '~1'))).join('/')}`,
});

let ajv: Ajv2020 | undefined;
let templates: { template: string; pattern: RegExp; parameters: number }[] | undefined;
let document: Document | undefined;
const validators = new Map<string, ValidateFunction>();

/** Checks answers against `served` from now on (the suite's document is the same for every app). */
export function load(served: Document) {
  if (document) return;
  document = served;
  ajv = documentAjv(served);
  templates = Object.keys(served.paths)
    .map((template) => ({
      template,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
      parameters: (template.match(/\{/g) ?? []).length,
    }))
    .sort((a, b) => a.parameters - b.parameters);
}

function validatorFor(template: string, method: string, status: string) {
  const reference = schemaRef(['paths', template, method, 'responses', status, 'content', 'application/json', 'schema']);
  let validate = validators.get(reference.$ref);
  if (!validate) {
    validate = ajv!.compile(reference);
    validators.set(reference.$ref, validate);
  }
  return validate;
}

interface Answer {
  status: number;
  headers: Record<string, string | undefined>;
  text: string;
}

/** What is wrong with this answer against the document, or undefined. */
export function nonConformance(method: string, url: string, answer: Answer, knownTemplate?: string): string | undefined {
  if (!document || !templates) return undefined;
  const path = url.replace(/^https?:\/\/[^/]+/, '').split('?')[0]!;
  const template = knownTemplate ?? templates.find((candidate) => candidate.pattern.test(path))?.template;
  const operation = template ? document.paths[template]![method] : undefined;
  if (!template || !operation) return undefined;
  const declared = operation.responses[String(answer.status)];
  if (!declared) return `${method.toUpperCase()} ${template} answered ${answer.status}, which it does not declare`;
  // A test that parsed the body itself (a stream it cut short) left no text to check.
  if (!declared.content?.['application/json'] || !(answer.headers['content-type'] ?? '').startsWith('application/json') || typeof answer.text !== 'string')
    return undefined;
  const validate = validatorFor(template, method, String(answer.status));
  if (validate(JSON.parse(answer.text))) return undefined;
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`).join('; ');
  return `${method.toUpperCase()} ${template} ${answer.status}: ${problems}`;
}

/** Server-sent events that did not match their declared schema, for file-setup.ts to fail the test with. */
export const eventMismatches: string[] = [];

/** The schema the document declares for an SSE event of this type (`event:` line), if any. */
const eventSchemaOf = (type: string) =>
  type === 'too_old' ? 'StreamTooOld' : type.startsWith('transaction.') ? 'TransactionEvent' : /^(task|application)\./.test(type) ? 'TaskEvent' : undefined;

/**
 * Holds one received SSE event's `data` against the document's schema for its type, as a client
 * generated from the document would read it; a mismatch is kept for the test to fail on.
 */
export function checkEvent(type: string, data: unknown) {
  const schema = eventSchemaOf(type);
  if (!ajv || !schema) return;
  const reference = schemaRef(['components', 'schemas', schema]);
  let validate = validators.get(reference.$ref);
  if (!validate) validators.set(reference.$ref, (validate = ajv.compile(reference)));
  if (validate(data)) return;
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`).join('; ');
  eventMismatches.push(`an SSE event ${type} is not the ${schema} the OpenAPI document declares: ${problems}`);
}

/** Holds a signed webhook delivery's body against the document's `webhooks` entry for its type. */
export function checkWebhook(rawBody: string) {
  const body = JSON.parse(rawBody) as { type?: string };
  const entries = (document as { webhooks?: Record<string, unknown> } | undefined)?.webhooks;
  const type = body.type;
  if (!ajv || typeof type !== 'string' || !entries?.[type]) return;
  const reference = schemaRef(['webhooks', type, 'post', 'requestBody', 'content', 'application/json', 'schema']);
  let validate = validators.get(reference.$ref);
  if (!validate) validators.set(reference.$ref, (validate = ajv.compile(reference)));
  if (validate(body)) return;
  const problems = (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message} ${JSON.stringify(error.params)}`).join('; ');
  eventMismatches.push(`a webhook ${type} is not the body the OpenAPI document declares: ${problems}`);
}

const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** supertest for `app`, each answer checked against the document the app serves. */
export function conformingHttp(app: Parameters<typeof supertest>[0]): ReturnType<typeof supertest> {
  const agent = supertest(app);
  let loading: Promise<void> | undefined;
  const ensureLoaded = () =>
    document
      ? Promise.resolve()
      : (loading ??= supertest(app)
          .get('/api/v1/public/openapi.json')
          .then((response) => load(response.body as Document)));
  for (const method of methods) {
    const original = agent[method].bind(agent);
    agent[method] = (url: string) => {
      const request = original(url);
      const end = request.end.bind(request);
      request.end = ((callback?: (error: unknown, response: supertest.Response) => void) =>
        end((error: unknown, response: supertest.Response) => {
          if (!response) return callback?.(error, response);
          ensureLoaded()
            .then(() => nonConformance(method, url, response as unknown as Answer))
            .then(
              (problem) => callback?.(error ?? (problem ? new Error(`the answer is not what the OpenAPI document declares: ${problem}`) : null), response),
              (thrown: unknown) => callback?.(thrown, response),
            );
        })) as typeof request.end;
      return request;
    };
  }
  return agent;
}
