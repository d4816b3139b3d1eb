import type { Knex } from 'knex';

/**
 * Which of a person's keys made each transaction (issue 31, "each agent's transactions" on the
 * console's My agents page; docs/decisions/money-and-escrow.md "Agent budgets"):
 * `transactions.api_key_id` is the key (an API key, a device grant or an MCP grant: all rows of
 * api_keys) whose agent budget the purchase counts against, null for a person's own session, an
 * operator's key and the system. A revoked key stays a row; a deleted one leaves its transactions
 * with null rather than taking them away.
 *
 * The index serves the list of one key's transactions, newest first with the keyset cursor on
 * (created_at, id) every listing uses; partial, as most transactions are made by no key.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.uuid('api_key_id').nullable().references('api_keys.id').onDelete('SET NULL');
  });
  await knex.raw('CREATE INDEX transactions_api_key_newest ON transactions (api_key_id, created_at DESC, id DESC) WHERE api_key_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS transactions_api_key_newest');
  await knex.schema.alterTable('transactions', (table) => table.dropColumn('api_key_id'));
}
