import { z } from 'zod';

/**
 * The response models of the original A2A samples (google/A2A, samples/python/common/types.py,
 * the tasks/send generation), restated as zod schemas with pydantic's rules: a field without a
 * default is required, `X | None` accepts null, unknown fields are ignored, `str` takes only
 * strings, and a part must carry its `type` (the union is discriminated on it, so a part with
 * only `kind` cannot be read). A shape the samples could not parse fails here the same way.
 */
const metadata = z.record(z.string(), z.unknown()).nullish();
const optionalText = z.string().nullish();

export const taskState = z.enum(['submitted', 'working', 'input-required', 'completed', 'canceled', 'failed', 'unknown']);

const textPart = z.object({ type: z.literal('text'), name: optionalText, text: z.string(), metadata });

const fileContent = z
  .object({ name: optionalText, mimeType: optionalText, bytes: optionalText, uri: optionalText })
  .refine((file) => Boolean(file.bytes) !== Boolean(file.uri), "exactly one of 'bytes' or 'uri' must be present in the file data");

const filePart = z.object({ type: z.literal('file'), name: optionalText, file: fileContent, metadata });

const dataPart = z.object({ type: z.literal('data'), name: optionalText, data: z.record(z.string(), z.unknown()), metadata });

export const part = z.discriminatedUnion('type', [textPart, filePart, dataPart]);

export const message = z.object({ role: z.enum(['user', 'agent']), parts: z.array(part), metadata });

/** pydantic's datetime takes ISO 8601 text (with or without an offset) or a Unix time. */
const timestamp = z.union([z.iso.datetime({ offset: true, local: true }), z.number()]);

export const taskStatus = z.object({ state: taskState, message: message.nullish(), timestamp: timestamp.optional() });

export const artifact = z.object({
  name: optionalText,
  description: optionalText,
  parts: z.array(part),
  metadata,
  index: z.number().int().default(0),
  append: z.boolean().nullish(),
  lastChunk: z.boolean().nullish(),
});

export const task = z.object({
  id: z.string(),
  sessionId: optionalText,
  status: taskStatus,
  artifacts: z.array(artifact).nullish(),
  history: z.array(message).nullish(),
  metadata,
});

export const taskStatusUpdateEvent = z.object({ id: z.string(), status: taskStatus, final: z.boolean().default(false), metadata });

export const taskArtifactUpdateEvent = z.object({ id: z.string(), artifact, metadata });

export const jsonRpcError = z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() });

const response = <T extends z.ZodType>(result: T) =>
  z.object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.number().int(), z.string()]).nullish(),
    // pydantic: `result: ... | None = None`, so an error response parses with result None.
    result: result.nullable().default(null),
    error: jsonRpcError.nullish(),
  });

/** SendTaskResponse, GetTaskResponse and CancelTaskResponse all carry a Task. */
export const taskResponse = response(task);

/**
 * SendTaskStreamingResponse. pydantic's smart union reads the stream's first event (the whole
 * task) as a TaskStatusUpdateEvent: it has the `id` and `status` that model needs.
 */
export const streamingResponse = response(z.union([taskStatusUpdateEvent, taskArtifactUpdateEvent]));

/** PushNotificationConfig, AuthenticationInfo and TaskPushNotificationConfig of the samples' common/types.py. */
const pushNotificationConfig = z.object({
  url: z.string(),
  token: optionalText,
  authentication: z.object({ schemes: z.array(z.string()), credentials: optionalText }).nullish(),
});
export const taskPushNotificationConfig = z.object({ id: z.string(), pushNotificationConfig: pushNotificationConfig });

/** SetTaskPushNotificationResponse and GetTaskPushNotificationResponse. */
export const taskPushNotificationResponse = response(taskPushNotificationConfig);

/** What a v0.1 push carries: the samples' task managers POST the whole Task. */
export const pushedTask = task;

export const agentCard = z.object({
  name: z.string(),
  description: optionalText,
  url: z.string(),
  provider: z.object({ organization: z.string(), url: optionalText }).nullish(),
  version: z.string(),
  documentationUrl: optionalText,
  capabilities: z.object({
    streaming: z.boolean().default(false),
    pushNotifications: z.boolean().default(false),
    stateTransitionHistory: z.boolean().default(false),
  }),
  authentication: z.object({ schemes: z.array(z.string()), credentials: optionalText }).nullish(),
  defaultInputModes: z.array(z.string()).default(['text']),
  defaultOutputModes: z.array(z.string()).default(['text']),
  skills: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      description: optionalText,
      tags: z.array(z.string()).nullish(),
      examples: z.array(z.string()).nullish(),
      inputModes: z.array(z.string()).nullish(),
      outputModes: z.array(z.string()).nullish(),
    }),
  ),
});

export type Task = z.output<typeof task>;
export type Message = z.output<typeof message>;
export type TaskResponse = z.output<typeof taskResponse>;
export type StreamingResponse = z.output<typeof streamingResponse>;
export type AgentCard = z.output<typeof agentCard>;
export type TaskPushNotificationResponse = z.output<typeof taskPushNotificationResponse>;
