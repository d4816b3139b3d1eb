import type { Knex } from 'knex';

/**
 * What the "My agents" page of the web console shows of each key (issue 31):
 * - `api_keys.origin`: how the key came to be: `device` (a device sign-in approved), `mcp` (an
 *   MCP sign-in allowed), `console` (made by the person on the console), null for the operator's.
 *   Existing keys are read from the rows that issued them.
 * - `api_keys.last_used_at`: when the key last authenticated a request, to the minute (each
 *   instance writes it at most once a minute per key: limits.apiKeyLastUsedResolutionMs).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (table) => {
    table.string('origin', 10).nullable();
    table.timestamp('last_used_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE api_keys ADD CONSTRAINT api_keys_origin CHECK (origin IS NULL OR origin IN ('device', 'mcp', 'console'))`);
  await knex.raw(`UPDATE api_keys k SET origin = 'mcp' WHERE EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.api_key_id = k.id)`);
  await knex.raw(`UPDATE api_keys k SET origin = 'device' WHERE origin IS NULL AND EXISTS (SELECT 1 FROM device_authorizations d WHERE d.api_key_id = k.id)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_origin');
  await knex.schema.alterTable('api_keys', (table) => {
    table.dropColumn('last_used_at');
    table.dropColumn('origin');
  });
}
