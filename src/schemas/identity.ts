import { z } from 'zod';
import { limits } from '../limits.ts';
import { agentBudgetView } from './agent-budgets.ts';
import { uuid } from './common.ts';

const email = z
  .email()
  .max(limits.emailLengthMax)
  .transform((value) => value.toLowerCase());

/** A password is weak when it is short or made of letters only or digits only. */
const password = z
  .string()
  .min(limits.passwordLengthMin, `must be at least ${limits.passwordLengthMin} characters`)
  .max(limits.passwordLengthMax)
  .refine((value) => /[A-Za-z]/.test(value) && /[^A-Za-z]/.test(value), 'must mix letters with digits or symbols');

export const signupBody = z
  .strictObject({ email, password, display_name: z.string().trim().min(1).max(limits.displayNameLengthMax).optional() })
  .meta({ id: 'SignupRequest' });

export const loginBody = z.strictObject({ email, password: z.string().min(1).max(limits.passwordLengthMax) }).meta({ id: 'LoginRequest' });

export const accessTokenResponse = z
  .object({ user_id: uuid, access_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int() })
  .meta({ id: 'AccessToken' });

export const meResponse = z
  .object({
    user_id: uuid,
    caller_type: z.enum(['agent', 'human']),
    agent_platform_type: z.string().nullable(),
    agent_budget: agentBudgetView
      .nullable()
      .meta({ description: "An agent key's budget, with what it was charged today and what is left; null: no budget bounds these credentials" }),
  })
  .meta({ id: 'Me' });

export const agentPlatformType = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'lowercase letters, digits, dot, dash or underscore, at most 64');

export const createApiKeyBody = z
  .strictObject({
    agent_platform_type: agentPlatformType,
    name: z.string().trim().min(1).max(limits.apiKeyNameLengthMax).optional(),
    auto_provision: z.boolean().optional(),
  })
  .meta({ id: 'CreateApiKeyRequest' });

export const apiKeyCreatedResponse = z
  .object({
    id: uuid,
    api_key: z.string().meta({ description: 'Shown only in this response; store it now.' }),
    key_prefix: z.string(),
    agent_platform_type: z.string(),
    name: z.string().nullable(),
    auto_provision: z.boolean(),
    created_at: z.string(),
  })
  .meta({ id: 'ApiKeyCreated' });

export const linkUserBody = z.strictObject({ user_id: uuid }).meta({ id: 'LinkUserRequest' });
export const linkResponse = z.object({ api_key_id: uuid, user_id: uuid }).meta({ id: 'ApiKeyLink' });
export const apiKeyIdParams = z.object({ id: uuid });

export type SignupInput = z.infer<typeof signupBody>;
export type LoginInput = z.infer<typeof loginBody>;
export type CreateApiKeyInput = z.infer<typeof createApiKeyBody>;
