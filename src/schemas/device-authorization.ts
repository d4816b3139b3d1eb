import { z } from 'zod';
import { agentPlatformTypes, deviceCodePattern, userCodeAlphabet, userCodeLength } from '../domain/device-codes.ts';
import { agentBudgetBody, agentBudgetView } from './agent-budgets.ts';
import { limits } from '../limits.ts';
import { uuid } from './common.ts';
import { pagedList, pageQuery } from './pagination.ts';

/** Device authorization (issue 11): the client's two calls, the page's two calls, and the person's keys. */
const platformType = z.enum(agentPlatformTypes).meta({ description: `One of ${agentPlatformTypes.join(', ')}; custom_mcp when left out.` });

export const startBody = z.strictObject({ agent_platform_type: platformType.default('custom_mcp') }).meta({ id: 'DeviceAuthorizationRequest' });

export const startResponse = z
  .object({
    device_code: z.string().meta({ description: 'The client keeps this secret and polls with it.' }),
    user_code: z.string().meta({ description: 'Shown to the person, who enters it at verification_url.' }),
    verification_url: z.string(),
    verification_url_complete: z.string().meta({ description: 'verification_url with the user code filled in' }),
    expires_in: z.number().int().meta({ description: 'seconds' }),
    interval: z.number().int().meta({ description: 'seconds to wait between polls' }),
    agent_platform_type: platformType,
  })
  .meta({ id: 'DeviceAuthorization' });

export const pollBody = z
  .strictObject({ device_code: z.string().regex(deviceCodePattern, 'must be the device_code the start call returned') })
  .meta({ id: 'DevicePollRequest' });

export const pollResponse = z
  .object({ status: z.literal('approved'), api_key: z.string(), user_id: uuid, agent_platform_type: platformType })
  .meta({ id: 'DeviceApproved', description: 'Only on approval; waiting is 4801, too fast 4802, expired or used 4803, denied 4804.' });

/** Case, spaces and a dash do not matter; the letters must come from the code's alphabet. */
const userCode = z
  .string()
  .max(32)
  .refine(
    (value) => new RegExp(`^[${userCodeAlphabet}]{${userCodeLength}}$`).test(value.toUpperCase().replace(/[\s-]/g, '')),
    'must be the eight-letter code the device shows, like WDJB-MJHT',
  );

export const lookupBody = z.strictObject({ user_code: userCode }).meta({ id: 'DeviceLookupRequest' });

export const confirmBody = z
  .strictObject({
    user_code: userCode,
    decision: z.enum(['approve', 'deny']),
    budget: agentBudgetBody.optional().meta({ description: 'With approve: the agent budget the issued key starts with (the person can change it later)' }),
  })
  .meta({ id: 'DeviceConfirmRequest' });

export const requestView = z
  .object({
    user_code: z.string(),
    agent_platform_type: platformType,
    agent_platform_name: z.string(),
    status: z.enum(['pending', 'approved', 'denied']),
    requested_at: z.string(),
    expires_at: z.string(),
  })
  .meta({ id: 'DeviceRequest' });

export const apiKeyView = z
  .object({
    id: uuid,
    key_prefix: z.string(),
    agent_platform_type: z.string(),
    name: z.string().nullable(),
    origin: z
      .enum(['device', 'mcp', 'console'])
      .nullable()
      .meta({ description: 'How the key came to be: a device sign-in, an MCP sign-in, or made by hand on the console' }),
    created_at: z.string(),
    last_used_at: z.string().nullable().meta({ description: 'When the key last authenticated a request, to the minute; null: never' }),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });

export const createApiKeyBody = z
  .strictObject({ name: z.string().trim().min(1).max(limits.apiKeyNameLengthMax).meta({ description: 'What the person calls the agent' }) })
  .meta({ id: 'OwnApiKeyCreate' });
export const createdApiKey = z
  .object({
    key: apiKeyView,
    api_key: z.string().meta({ description: 'The secret: shown in this answer only, never again' }),
    user_id: uuid.meta({ description: 'The person the key acts for: send it as X-Platform-User-Id' }),
  })
  .meta({ id: 'OwnApiKeyCreated' });

export const apiKeyListQuery = z.object({ page: pageQuery.page, page_size: pageQuery.page_size });
export const apiKeyListItem = apiKeyView
  .extend({ budget: agentBudgetView.nullable().meta({ description: 'What the key may spend and what is left today; null: no budget' }) })
  .meta({ id: 'ApiKeyWithBudget' });
export const apiKeyList = pagedList(apiKeyListItem).meta({ id: 'ApiKeyList' });
export const apiKeyParams = z.object({ id: uuid });

export type StartInput = z.infer<typeof startBody>;
export type RequestView = z.infer<typeof requestView>;
export type ApiKeyView = z.infer<typeof apiKeyView>;
