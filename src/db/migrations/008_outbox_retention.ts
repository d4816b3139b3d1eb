import type { Knex } from 'knex';
import { createIndexConcurrently } from '../concurrent-index.ts';

/**
 * The retention job (engine/common/retention.ts) deletes published outbox rows older than the retention
 * window, oldest first, in small batches. This partial index finds them without scanning the
 * table, and stays small because unpublished rows (the relay's concern) are not in it.
 *
 * The outbox was never pruned before this migration, so it may be large: the index is built
 * CONCURRENTLY, which does not block the state changes other instances keep writing, and which
 * PostgreSQL refuses inside a database transaction (hence `config.transaction = false`). A build
 * that failed halfway leaves an invalid index, which is dropped and built again.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await createIndexConcurrently(knex, 'outbox_events_published_created_at', 'ON outbox_events (created_at) WHERE published_at IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS outbox_events_published_created_at');
}
