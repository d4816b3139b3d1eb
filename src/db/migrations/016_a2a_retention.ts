import type { Knex } from 'knex';

/**
 * A2A history follows the retention of events (docs/decisions/a2a.md "History bounds"):
 * the retention job deletes stored messages older than OUTBOX_RETENTION_HOURS, and conversations
 * that never bought anything once their last change is that old. These indexes let it find them
 * without reading the tables.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX a2a_messages_created_at ON a2a_messages (created_at)');
  await knex.raw(`CREATE INDEX a2a_tasks_unbought_conversations ON a2a_tasks (updated_at) WHERE kind = 'conversation' AND transaction_id IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS a2a_tasks_unbought_conversations');
  await knex.raw('DROP INDEX IF EXISTS a2a_messages_created_at');
}
