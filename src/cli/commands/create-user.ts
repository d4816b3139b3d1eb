import { z } from 'zod';
import { signupBody } from '../../schemas/identity.ts';
import { defineCommand } from '../command.ts';

/**
 * Every field is optional: a user without email or password is an account that only agents act
 * for. A password alone is refused, because without an email it could never be used to sign in.
 */
export const createUser = defineCommand({
  name: 'create-user',
  description: 'Create a user account and print {user_id, email}.',
  options: {
    email: { type: 'string', placeholder: 'email', description: 'Email address to sign in with.' },
    password: { type: 'string', placeholder: 'password', description: 'Password; at least 8 characters mixing letters with digits or symbols. Needs --email.' },
    'display-name': { type: 'string', placeholder: 'name', description: 'Name shown to other users.' },
  },
  input: z
    .object({
      email: signupBody.shape.email.optional(),
      password: signupBody.shape.password.optional(),
      'display-name': signupBody.shape.display_name,
    })
    .refine((input) => input.password === undefined || input.email !== undefined, '--password needs --email to be usable for signing in'),
  run: (input, { engine }) => engine.identity.createUser({ email: input.email, password: input.password, display_name: input['display-name'] }),
});
