import type { Knex } from 'knex';

/**
 * An accepted task application becomes an escrow transaction (issue 18, docs/tasks.md
 * "Accepting"): the publisher buys from the skill's owner. Such a transaction names its task,
 * skill and application instead of a capability: exactly one of capability_id and task_id is set.
 * One transaction per application (unique), and the task remembers the one it was matched with.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions ALTER COLUMN capability_id DROP NOT NULL');
  await knex.schema.alterTable('transactions', (table) => {
    table.uuid('task_id').nullable().references('tasks.id');
    table.uuid('skill_id').nullable().references('skills.id');
    table.uuid('application_id').nullable().unique().references('task_applications.id');
  });
  await knex.raw(`ALTER TABLE transactions ADD CONSTRAINT transactions_bought_thing
    CHECK ((capability_id IS NULL) <> (task_id IS NULL) AND (task_id IS NULL) = (skill_id IS NULL) AND (task_id IS NULL) = (application_id IS NULL))`);
  await knex.schema.alterTable('tasks', (table) => {
    table.uuid('transaction_id').nullable().references('transactions.id');
  });
  await knex.raw(`ALTER TABLE tasks ADD CONSTRAINT tasks_matched_transaction CHECK ((status = 'matched') = (transaction_id IS NOT NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (table) => table.dropColumn('transaction_id'));
  await knex.raw('ALTER TABLE transactions DROP CONSTRAINT IF EXISTS transactions_bought_thing');
  await knex.schema.alterTable('transactions', (table) => {
    table.dropColumn('application_id');
    table.dropColumn('skill_id');
    table.dropColumn('task_id');
  });
  await knex.raw('ALTER TABLE transactions ALTER COLUMN capability_id SET NOT NULL');
}
