import type { Command } from '../command.ts';
import { createApiKey } from './create-api-key.ts';
import { createUser } from './create-user.ts';
import { credit } from './credit.ts';
import { linkUser } from './link-user.ts';
import { migrate } from './migrate.ts';
import { mintJwt } from './mint-jwt.ts';

/** Every CLI command, in the order help lists them. A new command is one import and one entry. */
export const commands: readonly Command[] = [createUser, createApiKey, linkUser, mintJwt, credit, migrate];
