import { z } from 'zod';
import { limits } from '../src/limits.ts';
import { uuid } from '../src/schemas/common.ts';
import { idempotencyKey } from '../src/schemas/transactions.ts';
import { amountInput } from '../src/schemas/money.ts';
import { validationError } from '../src/schemas/validation.ts';
import { dateTime } from '../src/schemas/common.ts';
import { pushConfigV0, pushConfigV1Inline } from './push-params.ts';

/**
 * The params of every method, validated with zod (failures: -32602 with the 4000 details).
 * Optional fields accept null too, because many clients serialize an absent value as null.
 * Unknown fields are ignored so that newer clients of the same generation still work.
 */
export function parse<T extends z.ZodType>(schema: T, params: unknown): z.output<T> {
  const result = schema.safeParse(params);
  if (!result.success) throw validationError(result.error, 'params', params);
  return result.data;
}

const metadata = z.record(z.string(), z.unknown()).nullish();
const taskId = z.string().min(1).max(limits.clientTaskIdLengthMax);
const historyLength = z.number().int().min(0).nullish();
/**
 * A2A sets no form for these ids: any string up to a documented length. An empty one counts as
 * absent (proto-JSON clients send "" for an unset field); longer ones are refused.
 */
const contextId = z.string().max(limits.a2aContextIdLengthMax).nullish();
const messageId = z.string().min(1).max(limits.a2aMessageIdLengthMax);

/** Parts are classified in purchase.ts; here only their outer shape is checked. */
const message = z.object({
  kind: z.literal('message').nullish(),
  role: z.enum(['user', 'ROLE_USER'], { error: 'must be the user role ("user" or "ROLE_USER")' }),
  parts: z.array(z.record(z.string(), z.unknown())).min(1).max(limits.rpcMessagePartsMax),
  messageId: messageId.nullish(),
  contextId,
  taskId: taskId.nullish(),
  metadata,
});

/** v0.2+ messages must carry a messageId: it is the request's idempotency key. */
const identifiedMessage = message.extend({ messageId });

export type MessageParams = z.output<typeof message>;

/** A2A v0.1 tasks/send and tasks/sendSubscribe: the client chooses the task id. */
export const sendV01 = z.object({
  id: idempotencyKey,
  sessionId: contextId,
  message,
  acceptedOutputModes: z.array(z.string()).nullish(),
  pushNotification: pushConfigV0.omit({ id: true }).nullish(),
  historyLength,
  metadata,
});

/** A2A v0.2/v0.3 message/send and message/stream. */
export const sendV03 = z.object({
  message: identifiedMessage,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string()).nullish(),
      historyLength,
      pushNotificationConfig: pushConfigV0.nullish(),
      blocking: z.boolean().nullish(),
    })
    .nullish(),
  metadata,
});

/** A2A v1.0 SendMessage and SendStreamingMessage. */
export const sendV10 = z.object({
  tenant: z.string().nullish(),
  message: identifiedMessage,
  configuration: z
    .object({
      acceptedOutputModes: z.array(z.string()).nullish(),
      historyLength,
      taskPushNotificationConfig: pushConfigV1Inline.nullish(),
      pushNotificationConfig: pushConfigV1Inline.nullish(),
      returnImmediately: z.boolean().nullish(),
    })
    .nullish(),
  metadata,
});

/** tasks/get, tasks/cancel, tasks/resubscribe (all generations) and GetTask, CancelTask, SubscribeToTask. */
export const taskQuery = z.object({ id: taskId, tenant: z.string().nullish(), historyLength, metadata });

/** A2A v1.0 TaskState names, in the order of their proto enum numbers (proto-JSON may send either). */
export const taskStates = [
  'TASK_STATE_UNSPECIFIED',
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_FAILED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_REJECTED',
  'TASK_STATE_AUTH_REQUIRED',
] as const;

const taskState = z.union(
  [
    z.enum(taskStates),
    z
      .number()
      .int()
      .min(0)
      .max(taskStates.length - 1)
      .transform((number) => taskStates[number]!),
  ],
  { error: `must be a v1.0 TaskState (${taskStates.join(', ')}) or its number` },
);

/** RFC 3339 with a zone (proto-JSON Timestamp), and a real instant. */
const timestamp = dateTime.refine((text) => !Number.isNaN(Date.parse(text)), 'must be a real instant');

/** A2A v1.0 ListTasks; an empty string is the proto default (no filter, first page). */
export const listTasks = z.object({
  tenant: z.string().nullish(),
  contextId,
  status: taskState.nullish(),
  pageSize: z.number().int().min(1).max(limits.pageSizeMax).nullish(),
  pageToken: z.string().max(limits.clientTaskIdLengthMax).nullish(),
  historyLength,
  statusTimestampAfter: z.union([z.literal(''), timestamp], { error: 'must be an RFC 3339 timestamp with a zone, e.g. 2024-03-15T10:00:00Z' }).nullish(),
  includeArtifacts: z.boolean().nullish(),
});

export const unsubscribe = z.object({ subscription: z.string().min(1).max(100) });

/** The data part that buys: the same fields as the REST create body. */
export const purchasePart = z.strictObject({
  capability_id: uuid,
  demand_id: uuid.optional(),
  booked_hours: z.number().int().min(limits.bookedHoursMin).max(limits.bookedHoursMax).optional(),
  input: z.record(z.string(), z.unknown()).optional(),
  // The most the buyer agrees to pay, as REST's max_price: a decimal string ("0.10") or number.
  max_price: amountInput.optional(),
});

/** The data part of a follow-up message on a delivered task. */
export const actionPart = z.strictObject({
  action: z.enum(['confirm', 'dispute']),
  reason: z.string().trim().min(1).max(2000).optional(),
});

export const noteLengthMax = limits.noteLengthMax;
