import type { Knex } from 'knex';

/** Each claim of an idempotency key gets a token; only the current claimant may complete it. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.uuid('claim_token').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('idempotency_keys', (table) => {
    table.dropColumn('claim_token');
  });
}
