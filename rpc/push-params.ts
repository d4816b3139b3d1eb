import { z } from 'zod';
import { isSendableHeaderValue, unsendableHeaderMessage } from '../src/domain/webhooks.ts';
import { limits } from '../src/limits.ts';

/**
 * The params of the push notification methods of each generation (docs/a2a-push-research.md
 * section 1). v1.0 clients write proto-JSON, whose parsers accept lowerCamel and snake_case
 * field names alike (the conformance kit sends `task_id`), so v1.0 params are read either way.
 */
const taskId = z.string().min(1).max(limits.clientTaskIdLengthMax);
const configId = z.string().min(1).max(limits.a2aPushConfigIdLengthMax);
const url = z.url({ protocol: /^https?$/, error: 'must be an http or https URL' }).max(limits.a2aPushUrlLengthMax);
/** What a push sends as a header (token, scheme, credentials) must be sendable as one, or no push could ever go. */
const headerText = (text: z.ZodString) => text.refine(isSendableHeaderValue, unsendableHeaderMessage);
const token = headerText(z.string().max(limits.a2aPushTokenLengthMax)).nullish();
const scheme = headerText(z.string().min(1).max(100));
const schemeV0 = headerText(z.string().max(100));
const credentials = headerText(z.string().max(limits.a2aPushTokenLengthMax)).nullish();
const metadata = z.record(z.string(), z.unknown()).nullish();

/** v0.1, v0.2 and v0.3: `authentication.schemes` (the first is the one used) and optional credentials. */
const authenticationV0 = z.object({ schemes: z.array(schemeV0).max(10), credentials }).nullish();

/** A v0.x PushNotificationConfig (v0.2.2 added its `id`). */
export const pushConfigV0 = z.object({ id: configId.nullish(), url, token, authentication: authenticationV0 });

/** v1.0: `authentication.scheme`; older v1.0 drafts and clients write `schemes` (the first is taken). */
const authenticationV1 = z
  .object({ scheme: scheme.nullish(), schemes: z.array(schemeV0).max(10).nullish(), credentials })
  .refine((value) => Boolean(value.scheme ?? value.schemes?.[0]), 'must name its scheme (e.g. "Bearer")')
  .nullish();

/** A v1.0 config inside a send: its task is the one the send makes or continues. */
export const pushConfigV1Inline = z.object({ id: z.string().max(limits.a2aPushConfigIdLengthMax).nullish(), url, token, authentication: authenticationV1 });

const snakeToCamel = (key: string) => key.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
/** proto-JSON names: `task_id` is `taskId`; the lowerCamel spelling wins when a client sends both. */
const protoJson = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const entries = Object.entries(value as Record<string, unknown>);
    const renamed = Object.fromEntries(entries.filter(([key]) => key.includes('_')).map(([key, each]) => [snakeToCamel(key), each]));
    return { ...renamed, ...Object.fromEntries(entries.filter(([key]) => !key.includes('_'))) };
  }, schema);

export const setV01 = z.object({ id: taskId, pushNotificationConfig: z.object({ url, token, authentication: authenticationV0 }).nullable(), metadata });
export const getV01 = z.object({ id: taskId, metadata });

export const setV03 = z.object({ taskId, pushNotificationConfig: pushConfigV0, metadata });
export const getV03 = z.object({ id: taskId, pushNotificationConfigId: configId.nullish(), metadata });
export const listV03 = z.object({ id: taskId, metadata });
export const deleteV03 = z.object({ id: taskId, pushNotificationConfigId: configId, metadata });

export const createV10 = protoJson(
  z.object({
    tenant: z.string().nullish(),
    taskId,
    id: z.string().max(limits.a2aPushConfigIdLengthMax).nullish(),
    url,
    token,
    authentication: authenticationV1,
  }),
);
export const getV10 = protoJson(z.object({ tenant: z.string().nullish(), taskId, id: configId }));
export const listV10 = protoJson(
  z.object({
    tenant: z.string().nullish(),
    taskId,
    pageSize: z.number().int().min(0).max(limits.pageSizeMax).nullish(),
    pageToken: z.string().max(20).regex(/^\d*$/, 'must be a nextPageToken this server gave').nullish(),
  }),
);
export const deleteV10 = getV10;

/** The inline config of each generation's send, as stored: scheme and credentials as A2A's Authorization header wants them. */
export function authOf(authentication: { scheme?: string | null; schemes?: string[] | null; credentials?: string | null } | null | undefined) {
  const chosen = authentication?.scheme ?? authentication?.schemes?.[0] ?? null;
  return { scheme: chosen || null, credentials: chosen ? (authentication?.credentials ?? null) : null };
}
