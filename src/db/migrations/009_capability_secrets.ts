import type { Knex } from 'knex';

/**
 * Capabilities get what invoke and the full capability surface need:
 * - `callback_secret`: the key that signs the callbacks of invoke (decisions section 7). It is
 *   kept as written because the server must compute HMACs with it; it is shown to the owner once,
 *   at creation or rotation, and never returned by any read.
 * - `deleted_at`: delete is a soft delete, so that past transactions keep their capability. A
 *   deleted capability also has `available = false`, so "available" alone says whether it can be
 *   bought or matched.
 * Capabilities created before this migration get a secret here (from gen_random_uuid, a strong
 * random source: 244 random bits), so every capability can be invoked.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('capabilities', (table) => {
    table.text('callback_secret').nullable();
    table.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw(
    `UPDATE capabilities SET callback_secret = 'cbs_' || replace(gen_random_uuid()::text, '-', '') || replace(gen_random_uuid()::text, '-', '') WHERE callback_secret IS NULL`,
  );
  await knex.raw(`ALTER TABLE capabilities ADD CONSTRAINT capabilities_deleted_not_available CHECK (deleted_at IS NULL OR available = false)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE capabilities DROP CONSTRAINT IF EXISTS capabilities_deleted_not_available');
  await knex.schema.alterTable('capabilities', (table) => {
    table.dropColumn('callback_secret');
    table.dropColumn('deleted_at');
  });
}
