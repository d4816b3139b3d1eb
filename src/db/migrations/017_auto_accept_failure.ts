import type { Knex } from 'knex';

/**
 * Why an auto-accept demand could not buy (docs/decisions/money-and-escrow.md "Auto-accept's purchases"):
 * the last refusal (its code, message, data, the capability and when), shown in the demand's view
 * until a later attempt buys.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('demands', (table) => {
    table.jsonb('auto_accept_failure').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('demands', (table) => {
    table.dropColumn('auto_accept_failure');
  });
}
