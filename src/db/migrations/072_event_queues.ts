import type { Knex } from 'knex';

/**
 * Publishing and dispatching an event stop rewriting its row (docs/decisions/streams-and-deliveries.md
 * "What is still owed, in queues of its own"). Until now each event row carried `published_at` and
 * `dispatched_at`, set by the publisher and the webhook dispatcher after the commit: two UPDATEs
 * per event, each writing a new version of the whole row (its payload included) and an entry in
 * every index of the table, since partial indexes named both columns. Here what is still owed
 * lives in two narrow tables, one row per event and duty: `unpublished_events` (the bus; the relay
 * reads it) and `undispatched_events` (the webhook dispatcher). A statement trigger on each event
 * table queues what it inserted, in the same statement, so every writer of an event queues it, and
 * the publisher and the dispatcher delete their rows when done: no row of an event table is
 * updated any more. Migration 073 drops the columns and the partial indexes that used them.
 *
 * Deploying: an instance of an earlier version marks the columns and never deletes a queue row, so
 * the events it publishes or dispatches after this migration would be relayed or dispatched again
 * by the new ones. Stop the earlier instances before this migration runs.
 */
const queuedFor = { outbox_events: 'both', task_events: 'both', demand_events: 'dispatch' } as const;

export async function up(knex: Knex): Promise<void> {
  for (const queue of ['unpublished_events', 'undispatched_events']) {
    await knex.raw(`CREATE TABLE ${queue} (
      feed text NOT NULL CHECK (feed IN ('outbox_events', 'task_events', 'demand_events')),
      event_id bigint NOT NULL,
      PRIMARY KEY (feed, event_id)
    )`);
  }
  await knex.raw(`CREATE FUNCTION queue_new_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'both' THEN
        INSERT INTO unpublished_events (feed, event_id) SELECT TG_TABLE_NAME, id FROM new_events;
      END IF;
      INSERT INTO undispatched_events (feed, event_id) SELECT TG_TABLE_NAME, id FROM new_events;
      RETURN NULL;
    END $$`);
  for (const [table, duties] of Object.entries(queuedFor)) {
    await knex.raw(
      `CREATE TRIGGER ${table}_queued AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION queue_new_events('${duties}')`,
    );
    if (duties === 'both') await knex.raw(`INSERT INTO unpublished_events (feed, event_id) SELECT '${table}', id FROM ${table} WHERE published_at IS NULL`);
    await knex.raw(`INSERT INTO undispatched_events (feed, event_id) SELECT '${table}', id FROM ${table} WHERE dispatched_at IS NULL`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of Object.keys(queuedFor)) await knex.raw(`DROP TRIGGER ${table}_queued ON ${table}`);
  await knex.raw('DROP FUNCTION queue_new_events()');
  await knex.raw('DROP TABLE unpublished_events');
  await knex.raw('DROP TABLE undispatched_events');
}
