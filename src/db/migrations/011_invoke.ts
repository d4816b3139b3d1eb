import type { Knex } from 'knex';

/**
 * Invoke (issue 9) needs:
 * - `transactions.invoke_deadline`: when an invoke's callback has certainly outlived its timeout.
 *   An invoke commits its hold before it calls out; if the server dies during the call, the
 *   sweeper finds the frozen transaction past this deadline and releases it. The partial index
 *   keeps that search cheap: only frozen invokes are in it.
 * - `invoke_latency_ms`, `invoke_error` and `invoke_error_detail`: the outcome of the call, so that a retry with the same
 *   idempotency key replays exactly the first answer, from the row.
 * - `capability_usage`: how often a capability was bought or invoked in a window (one row per
 *   capability, window kind and window start). The database counts, so the capability's
 *   rate_limit_per_min and daily_limit hold across every server instance, exactly, and a count
 *   taken inside the buy's own database transaction is undone with it when the buy fails.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.timestamp('invoke_deadline', { useTz: true }).nullable();
    table.integer('invoke_latency_ms').nullable();
    table.text('invoke_error').nullable();
    table.text('invoke_error_detail').nullable();
  });
  await knex.raw(`CREATE INDEX transactions_invoke_deadline ON transactions (invoke_deadline) WHERE status = 'frozen' AND invoke_deadline IS NOT NULL`);
  await knex.schema.createTable('capability_usage', (table) => {
    table.uuid('capability_id').notNullable();
    table.text('window_kind').notNullable();
    table.timestamp('window_start', { useTz: true }).notNullable();
    table.integer('used').notNullable();
    table.primary(['capability_id', 'window_kind', 'window_start']);
    table.index(['window_start']);
  });
  await knex.raw(`ALTER TABLE capability_usage ADD CONSTRAINT capability_usage_kind CHECK (window_kind IN ('minute', 'day'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('capability_usage');
  await knex.raw('DROP INDEX IF EXISTS transactions_invoke_deadline');
  await knex.schema.alterTable('transactions', (table) => {
    table.dropColumn('invoke_deadline');
    table.dropColumn('invoke_latency_ms');
    table.dropColumn('invoke_error');
    table.dropColumn('invoke_error_detail');
  });
}
