import type { Knex } from 'knex';

/**
 * Device authorization (docs/decisions/identity-and-access.md "Device authorization"):
 * - `device_authorizations`: one row per request a client started. Both codes are stored only as
 *   SHA-256 hashes, each unique, so a code finds its row and nothing else. `status` moves
 *   pending -> approved | denied, and approved -> redeemed when the client collects its key,
 *   each by one conditional UPDATE so that concurrent moves cannot both win. `interval_seconds`
 *   grows each time the client polls too fast (RFC 8628 slow_down).
 * - `api_keys.owner_user_id`: the person who approved a device request owns the key it issued,
 *   and only they list and revoke it. Keys made by the operator have no owner.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('device_authorizations', (table) => {
    table.uuid('id').primary();
    table.string('device_code_hash', 64).notNullable().unique();
    table.string('user_code_hash', 64).notNullable().unique();
    table.string('agent_platform_type', 64).notNullable();
    table.text('status').notNullable().defaultTo('pending');
    table.integer('interval_seconds').notNullable();
    table.timestamp('last_polled_at', { useTz: true }).nullable();
    table.uuid('user_id').nullable().references('users.id').onDelete('CASCADE');
    table.uuid('api_key_id').nullable().references('api_keys.id').onDelete('SET NULL');
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.timestamp('decided_at', { useTz: true }).nullable();
    table.timestamp('redeemed_at', { useTz: true }).nullable();
    table.index(['expires_at']);
  });
  await knex.raw(
    `ALTER TABLE device_authorizations ADD CONSTRAINT device_authorizations_status CHECK (status IN ('pending', 'approved', 'denied', 'redeemed'))`,
  );
  await knex.schema.alterTable('api_keys', (table) => {
    table.uuid('owner_user_id').nullable().references('users.id').onDelete('CASCADE');
    table.index(['owner_user_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (table) => {
    table.dropIndex(['owner_user_id', 'created_at']);
    table.dropColumn('owner_user_id');
  });
  await knex.schema.dropTableIfExists('device_authorizations');
}
