import type { Knex } from 'knex';

/**
 * A2A v0.1 clients choose the task id themselves. It is kept on the transaction (unique per
 * buyer), so tasks/get and tasks/cancel keep finding it after its idempotency key has expired.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.string('client_task_id', 64).nullable();
    table.unique(['buyer_user_id', 'client_task_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('transactions', (table) => {
    table.dropUnique(['buyer_user_id', 'client_task_id']);
    table.dropColumn('client_task_id');
  });
}
