import type { Knex } from 'knex';

/**
 * The database enforces the two rules of the ledger that the engine already follows, so that no
 * bug, script or hand-written statement can break them:
 *
 * - Every movement sums to zero per currency. A statement-level AFTER INSERT trigger groups the
 *   rows the statement inserted (its transition table) by movement and currency and refuses the
 *   statement when a group does not sum to zero. It relies on one rule: a movement's entries are
 *   inserted by one statement (the one ledger writer, store/ledger.ts, does so); a movement split
 *   over two statements is refused even if its halves would balance. A statement-level trigger
 *   costs one aggregate over the few new rows per statement, against a per-row constraint trigger
 *   that would re-read the table once per entry at commit.
 * - Entries are append-only, now including TRUNCATE (UPDATE and DELETE are refused since 002).
 *
 * The refusal of an unbalanced movement is a check_violation with its own constraint name, so it
 * is never mistaken for the accounts' "not enough money" constraint.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE FUNCTION ledger_entries_movement_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE unbalanced record;
    BEGIN
      SELECT movement_id, currency, sum(amount) AS total INTO unbalanced
        FROM new_entries GROUP BY movement_id, currency HAVING sum(amount) <> 0 LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'ledger movement % does not sum to zero in %: %', unbalanced.movement_id, unbalanced.currency, unbalanced.total
          USING ERRCODE = 'check_violation', CONSTRAINT = 'ledger_movement_balanced';
      END IF;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER ledger_entries_movement_balanced AFTER INSERT ON ledger_entries
    REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_movement_balanced()`);
  await knex.raw(`CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS ledger_entries_no_truncate ON ledger_entries');
  await knex.raw('DROP TRIGGER IF EXISTS ledger_entries_movement_balanced ON ledger_entries');
  await knex.raw('DROP FUNCTION IF EXISTS ledger_entries_movement_balanced()');
}
