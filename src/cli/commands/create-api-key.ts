import { z } from 'zod';
import { agentPlatformType, createApiKeyBody } from '../../schemas/identity.ts';
import { defineCommand } from '../command.ts';

/** The key itself exists only in this output (the database keeps its hash), hence the warning. */
export const createApiKey = defineCommand({
  name: 'create-api-key',
  description: 'Create a platform API key and print it once, with its id.',
  options: {
    platform: { type: 'string', required: true, placeholder: 'agent_platform_type', description: 'The agent platform the key belongs to, e.g. custom_mcp.' },
    name: { type: 'string', placeholder: 'name', description: 'A label for operators.' },
    'auto-provision': { type: 'boolean', description: 'Trust the platform to bring its own user ids: unknown ones are created and linked on first use.' },
  },
  input: z.object({
    platform: agentPlatformType,
    name: createApiKeyBody.shape.name,
    'auto-provision': z.boolean().optional(),
  }),
  async run(input, { engine, notice }) {
    const created = await engine.identity.createApiKey({
      agent_platform_type: input.platform,
      name: input.name,
      auto_provision: input['auto-provision'] ?? false,
    });
    notice('warning: store api_key now; it is kept only as a hash and will not be shown again.');
    return created;
  },
});
