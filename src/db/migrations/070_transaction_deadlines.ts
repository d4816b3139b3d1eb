import type { Knex } from 'knex';

/**
 * A transaction's move rewrites its row without touching an index (a HOT update: PostgreSQL keeps
 * the new version on the same page and adds no index entry), instead of adding an entry to each of
 * the table's eleven indexes (docs/decisions/money-and-escrow.md "Moves that leave the indexes
 * alone"). PostgreSQL can do that only if no index names a column the move changes, in its key
 * or its predicate, and three did, all through `status`; this migration and 071 take them away.
 *
 * Here: the sweeper's deadlines get a table of their own, `transaction_deadlines`. A row is
 * written by the change statement that enters the state (deliver; an invoke's hold) and deleted
 * by the one that leaves it, so the table holds only deadlines still running and the sweeper reads
 * the due ones from its (kind, due_at) index. The deadlines running now are copied in, through the
 * sweeper's two partial indexes, which 071 drops after.
 *
 * Deploying: an instance of an earlier version writes no deadline rows. Stop the earlier instances
 * before this migration runs (or run `backfillDeadlines` again once the last one is gone, which
 * then reads the whole table once): a transaction an earlier instance delivers afterwards would
 * otherwise wait for its buyer's confirmation instead of being auto-confirmed.
 */
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
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE transaction_deadlines');
}
