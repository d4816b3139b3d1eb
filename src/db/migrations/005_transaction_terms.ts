import type { Knex } from 'knex';

/**
 * The platform fee is part of a purchase's terms: fixed when the transaction is created, so a
 * configuration change never alters money already in escrow. The buyer's dispute reason is kept
 * for the operator who resolves it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.integer('fee_bps').notNullable().defaultTo(0);
    table.text('dispute_reason').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.dropColumn('fee_bps');
    table.dropColumn('dispute_reason');
  });
}
