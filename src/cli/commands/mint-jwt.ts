import { z } from 'zod';
import { limits } from '../../limits.ts';
import { uuid } from '../../schemas/common.ts';
import { defineCommand } from '../command.ts';

/**
 * A year bounds the lifetime an operator can mint, so that a forgotten token cannot stay valid
 * indefinitely; a longer-lived caller should use an API key instead.
 */
const lifetimeSecondsMax = 365 * 24 * 60 * 60;

const lifetimeSeconds = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be a positive whole number of seconds')
  .transform(Number)
  .pipe(z.number().int().max(lifetimeSecondsMax, `must be at most ${lifetimeSecondsMax} seconds (one year)`));

export const mintJwt = defineCommand({
  name: 'mint-jwt',
  description: 'Mint an access token for a user and print it as JSON (use it as Authorization: Bearer).',
  options: {
    'user-id': { type: 'string', required: true, placeholder: 'uuid', description: 'The user the token is for.' },
    'expires-in': { type: 'string', placeholder: 'seconds', description: `Token lifetime in seconds (default ${limits.jwtLifetimeSeconds}).` },
  },
  input: z.object({ 'user-id': uuid, 'expires-in': lifetimeSeconds.optional() }),
  run: (input, { engine }) => engine.identity.mintToken(input['user-id'], input['expires-in']),
});
