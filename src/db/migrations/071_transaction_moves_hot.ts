import type { Knex } from 'knex';
import { createIndexConcurrently } from '../concurrent-index.ts';

/**
 * The indexes of `transactions` that named `status` go (docs/decisions/money-and-escrow.md "Moves
 * that leave the indexes alone"; migration 070 moved the sweeper's deadlines to a table of their
 * own first): the sweeper's two partial indexes, and `(capability_id, status)`, replaced by
 * `(capability_id, settled_at)`, which counts a capability's settled sales (`settled_at` is set
 * exactly when a transaction settles, a terminal state) and serves the foreign key from
 * capabilities. Only the settling move of a lifecycle still writes index entries.
 *
 * Built and dropped CONCURRENTLY, as in migrations 008 and 010, so that a large table keeps taking
 * reads and writes meanwhile; a build that failed halfway leaves an invalid index, which is dropped
 * and built again. `fillfactor` 85 leaves room on each page for the new versions of its rows: on
 * pages written from now on (older full pages gain room as rows on them are pruned, or at once
 * with a rewrite of the table).
 */
export const config = { transaction: false };

const added = { transactions_capability_id_settled_at_index: 'ON transactions (capability_id, settled_at)' };
const dropped = ['transactions_capability_id_status_index', 'transactions_due_for_auto_confirm', 'transactions_invoke_deadline'];

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of Object.entries(added)) await createIndexConcurrently(knex, name, definition);
  for (const name of dropped) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  await knex.raw('ALTER TABLE transactions SET (fillfactor = 85)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions RESET (fillfactor)');
  await knex.raw(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_invoke_deadline ON transactions (invoke_deadline) WHERE status = 'frozen' AND invoke_deadline IS NOT NULL`,
  );
  await knex.raw(`CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_due_for_auto_confirm ON transactions (auto_confirm_at) WHERE status = 'delivered'`);
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS transactions_capability_id_status_index ON transactions (capability_id, status)');
  for (const name of Object.keys(added)) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
