import { z } from 'zod';
import { uuid } from '../../schemas/common.ts';
import { defineCommand } from '../command.ts';

/** Linking is idempotent: linking an already linked user succeeds and changes nothing. */
export const linkUser = defineCommand({
  name: 'link-user',
  description: 'Allow an API key to act for a user (X-Platform-User-Id).',
  options: {
    'api-key-id': { type: 'string', required: true, placeholder: 'uuid', description: 'The API key id, as create-api-key printed it.' },
    'user-id': { type: 'string', required: true, placeholder: 'uuid', description: 'The user the key may act for.' },
  },
  input: z.object({ 'api-key-id': uuid, 'user-id': uuid }),
  run: (input, { engine }) => engine.identity.linkUser(input['api-key-id'], input['user-id']),
});
