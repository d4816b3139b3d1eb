import { z } from 'zod';
import { migrateToLatest } from '../../db/migrate.ts';
import { defineCommand } from '../command.ts';

/**
 * The runtime is opened without its own migration step so that this command can report which
 * migrations it applied; running it again applies nothing and reports an empty list.
 */
export const migrate = defineCommand({
  name: 'migrate',
  description: 'Apply pending database migrations and print the names applied.',
  options: {},
  input: z.object({}),
  runtimeOptions: { migrate: false },
  async run(_input, { runtime, log }) {
    const applied = await migrateToLatest(runtime.database.db, (line) => log.info(line));
    return { applied };
  },
});
