import type { Knex } from 'knex';

/**
 * Price ceilings and conversation purchases (docs/decisions/money-and-escrow.md "Price ceilings"):
 * - `transactions_buyer_capability`: a buyer's newest purchase of a capability is one index read,
 *   because every purchase without an explicit max_price looks up the price the buyer paid last
 *   time (a repeat buyer is never charged a raised price silently).
 * - `transactions.conversation_id`: the A2A conversation a transaction was bought in. Unique, so
 *   a conversation buys at most once ever, also after its pick's idempotency key has expired.
 *   Existing conversations are backfilled from the transaction their task row names.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX transactions_buyer_capability ON transactions (buyer_user_id, capability_id, created_at DESC)');
  await knex.schema.alterTable('transactions', (table) => {
    table.uuid('conversation_id').nullable();
  });
  await knex.raw(`UPDATE transactions SET conversation_id = a2a_tasks.id FROM a2a_tasks
    WHERE a2a_tasks.kind = 'conversation' AND a2a_tasks.transaction_id = transactions.id`);
  await knex.raw('CREATE UNIQUE INDEX transactions_one_per_conversation ON transactions (conversation_id) WHERE conversation_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS transactions_one_per_conversation');
  await knex.schema.alterTable('transactions', (table) => {
    table.dropColumn('conversation_id');
  });
  await knex.raw('DROP INDEX IF EXISTS transactions_buyer_capability');
}
