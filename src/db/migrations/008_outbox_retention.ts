import type { Knex } from 'knex';

/**
 * The retention job (engine/retention.ts) deletes published outbox rows older than the retention
 * window, oldest first, in small batches. This partial index finds them without scanning the
 * table, and stays small because unpublished rows (the relay's concern) are not in it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX IF NOT EXISTS outbox_events_published_created_at ON outbox_events (created_at) WHERE published_at IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS outbox_events_published_created_at');
}
