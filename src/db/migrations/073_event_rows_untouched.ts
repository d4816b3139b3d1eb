import type { Knex } from 'knex';
import { createIndexConcurrently } from '../concurrent-index.ts';
import { createMarkBridge, queuedFor } from './072_event_queues.ts';

/**
 * The event tables' `published_at` and `dispatched_at` go, with the partial indexes that named them
 * (migration 072 moved what they said to `unpublished_events` and `undispatched_events`). Retention
 * finds old rows by a plain `created_at` index instead of the one on published rows only; the
 * demand events had one already. Built and dropped CONCURRENTLY, outside a database transaction,
 * as in migrations 008, 010 and 071, so that a large table keeps taking reads and writes meanwhile.
 */
export const config = { transaction: false };

const added = {
  outbox_events_created_at: 'ON outbox_events (created_at)',
  task_events_created_at: 'ON task_events (created_at)',
};
const dropped = [
  'outbox_events_unpublished',
  'outbox_events_undispatched',
  'outbox_events_published_created_at',
  'task_events_unpublished',
  'task_events_undispatched',
  'task_events_published_created_at',
  'demand_events_undispatched',
];
const lockTimeout = '10s';
const columns = { outbox_events: ['published_at', 'dispatched_at'], task_events: ['published_at', 'dispatched_at'], demand_events: ['dispatched_at'] };

export async function up(knex: Knex): Promise<void> {
  for (const [name, definition] of Object.entries(added)) await createIndexConcurrently(knex, name, definition);
  for (const name of dropped) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
  for (const [table, names] of Object.entries(columns)) {
    // Dropping a column waits for every reader of the table and holds up every writer meanwhile:
    // past lockTimeout it gives up (the migration fails and runs again at the next start) rather
    // than stalling the moves behind a long read.
    await knex.transaction(async (trx) => {
      await trx.raw(`SET LOCAL lock_timeout = '${lockTimeout}'`);
      await trx.raw(`DROP TRIGGER IF EXISTS ${table}_marked ON ${table}`);
      await trx.raw(`ALTER TABLE ${table} ${names.map((name) => `DROP COLUMN IF EXISTS ${name}`).join(', ')}`);
    });
  }
  await knex.raw('DROP FUNCTION IF EXISTS unqueue_marked_event()');
}

/** The columns come back filled from the queues (a row not queued was published and dispatched). */
export async function down(knex: Knex): Promise<void> {
  for (const [table, names] of Object.entries(columns)) {
    await knex.raw(`ALTER TABLE ${table} ${names.map((name) => `ADD COLUMN IF NOT EXISTS ${name} timestamptz`).join(', ')}`);
    const queueOf = { published_at: 'unpublished_events', dispatched_at: 'undispatched_events' } as Record<string, string>;
    const settings = names.map(
      (name) =>
        `${name} = CASE WHEN EXISTS (SELECT 1 FROM ${queueOf[name]} queued WHERE queued.feed = '${table}' AND queued.event_id = ${table}.id) THEN NULL ELSE created_at END`,
    );
    await knex.raw(`UPDATE ${table} SET ${settings.join(', ')}`);
    await createMarkBridge(knex, table, queuedFor[table as keyof typeof queuedFor]);
  }
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_events_unpublished ON outbox_events (id) WHERE published_at IS NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_events_undispatched ON outbox_events (id) WHERE dispatched_at IS NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_events_published_created_at ON outbox_events (created_at) WHERE published_at IS NOT NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS task_events_unpublished ON task_events (id) WHERE published_at IS NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS task_events_undispatched ON task_events (id) WHERE dispatched_at IS NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS task_events_published_created_at ON task_events (created_at) WHERE published_at IS NOT NULL');
  await knex.raw('CREATE INDEX CONCURRENTLY IF NOT EXISTS demand_events_undispatched ON demand_events (id) WHERE dispatched_at IS NULL');
  for (const name of Object.keys(added)) await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
}
