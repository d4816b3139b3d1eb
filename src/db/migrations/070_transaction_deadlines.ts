import type { Knex } from 'knex';

/**
 * A transaction's move rewrites its row without touching an index (a HOT update: PostgreSQL keeps
 * the new version on the same page and adds no index entry), instead of adding an entry to each of
 * the table's eleven indexes (docs/decisions/money-and-escrow.md "Moves that leave the indexes
 * alone"). PostgreSQL can do that only if no index names a column the move changes, in its key
 * or its predicate, and three did, all through `status`:
 *
 * - the sweeper's two partial indexes (`auto_confirm_at` of delivered rows, `invoke_deadline` of
 *   frozen ones). The deadlines now have a table of their own, `transaction_deadlines`: a row is
 *   written by the change statement that enters the state (deliver; an invoke's hold) and deleted
 *   by the one that leaves it, so the table holds only deadlines still running and the sweeper
 *   reads the due ones from its (kind, due_at) index;
 * - `(capability_id, status)`, which counted a capability's settled sales and served the foreign
 *   key from capabilities. `(capability_id, settled_at)` does both: `settled_at` is set exactly
 *   when a transaction settles (a terminal state), so only that one move of a lifecycle still
 *   writes index entries.
 *
 * `fillfactor` 85 leaves room on each page for the new versions of its rows.
 */
/** The deadlines still running when the table is made: delivered rows' auto-confirms, frozen invokes' deadlines. */
export async function backfillDeadlines(knex: Knex): Promise<void> {
  await knex.raw(`INSERT INTO transaction_deadlines (transaction_id, kind, due_at)
    SELECT id, 'auto_confirm', auto_confirm_at FROM transactions WHERE status = 'delivered' AND auto_confirm_at IS NOT NULL
    UNION ALL SELECT id, 'invoke', invoke_deadline FROM transactions WHERE status = 'frozen' AND invoke_deadline IS NOT NULL
    ON CONFLICT (transaction_id, kind) DO NOTHING`);
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE transaction_deadlines (
    transaction_id uuid NOT NULL,
    kind text NOT NULL CHECK (kind IN ('auto_confirm', 'invoke')),
    due_at timestamptz NOT NULL,
    PRIMARY KEY (transaction_id, kind)
  )`);
  await knex.raw('CREATE INDEX transaction_deadlines_due ON transaction_deadlines (kind, due_at)');
  await backfillDeadlines(knex);
  await knex.raw('CREATE INDEX transactions_capability_id_settled_at_index ON transactions (capability_id, settled_at)');
  await knex.raw('DROP INDEX transactions_capability_id_status_index');
  await knex.raw('DROP INDEX transactions_due_for_auto_confirm');
  await knex.raw('DROP INDEX transactions_invoke_deadline');
  await knex.raw('ALTER TABLE transactions SET (fillfactor = 85)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions RESET (fillfactor)');
  await knex.raw(`CREATE INDEX transactions_invoke_deadline ON transactions (invoke_deadline) WHERE status = 'frozen' AND invoke_deadline IS NOT NULL`);
  await knex.raw(`CREATE INDEX transactions_due_for_auto_confirm ON transactions (auto_confirm_at) WHERE status = 'delivered'`);
  await knex.raw('CREATE INDEX transactions_capability_id_status_index ON transactions (capability_id, status)');
  await knex.raw('DROP INDEX transactions_capability_id_settled_at_index');
  await knex.raw('DROP TABLE transaction_deadlines');
}
