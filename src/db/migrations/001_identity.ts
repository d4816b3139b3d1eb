import type { Knex } from 'knex';

/** Users, platform API keys (stored only as hashes) and the links that let a key act for a user. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (table) => {
    table.uuid('id').primary();
    table.string('email', 254).nullable().unique();
    table.string('password_hash', 200).nullable();
    table.string('display_name', 100).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('api_keys', (table) => {
    table.uuid('id').primary();
    table.string('agent_platform_type', 64).notNullable();
    table.string('name', 100).nullable();
    table.string('key_prefix', 32).notNullable().unique();
    table.string('key_hash', 64).notNullable();
    table.boolean('auto_provision').notNullable().defaultTo(false);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('revoked_at', { useTz: true }).nullable();
  });
  await knex.schema.createTable('api_key_links', (table) => {
    table.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['api_key_id', 'user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_key_links');
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('users');
}
