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
 * A row deleted from an event table takes its queue rows with it (a second statement trigger),
 * so a queue never holds an event that is gone.
 *
 * Deploying while instances of the earlier version still run: they mark the columns instead of
 * deleting queue rows, so until migration 073 drops the columns a third trigger turns their marks
 * into deletes from the queues (no event is relayed or dispatched twice). It is made before the
 * queues are filled: making it locks each table against writes until this migration commits, so
 * every mark made before is seen by the filling and every mark made after meets the trigger.
 * Once 073 has run, an earlier instance's relay and dispatcher fail on the missing columns (and
 * say so in its log) while its moves go on; the new instances relay and dispatch.
 */
export const queuedFor = { outbox_events: 'both', task_events: 'both', demand_events: 'dispatch' } as const;

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
        INSERT INTO unpublished_events (feed, event_id) SELECT TG_TABLE_NAME, id FROM new_events ON CONFLICT DO NOTHING;
      END IF;
      INSERT INTO undispatched_events (feed, event_id) SELECT TG_TABLE_NAME, id FROM new_events ON CONFLICT DO NOTHING;
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE FUNCTION forget_deleted_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM unpublished_events queued USING old_events WHERE queued.feed = TG_TABLE_NAME AND queued.event_id = old_events.id;
      DELETE FROM undispatched_events queued USING old_events WHERE queued.feed = TG_TABLE_NAME AND queued.event_id = old_events.id;
      RETURN NULL;
    END $$`);
  for (const [table, duties] of Object.entries(queuedFor)) {
    await createMarkBridge(knex, table, duties);
    await knex.raw(
      `CREATE TRIGGER ${table}_queued AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION queue_new_events('${duties}')`,
    );
    await knex.raw(
      `CREATE TRIGGER ${table}_forgotten AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION forget_deleted_events()`,
    );
    if (duties === 'both') await knex.raw(`INSERT INTO unpublished_events (feed, event_id) SELECT '${table}', id FROM ${table} WHERE published_at IS NULL`);
    await knex.raw(`INSERT INTO undispatched_events (feed, event_id) SELECT '${table}', id FROM ${table} WHERE dispatched_at IS NULL`);
  }
}

/**
 * Only while the columns exist (until 073, and again if 073 is undone): an earlier instance's mark
 * takes the row off the queue it names. Making the trigger locks the table against writes until
 * the migration commits.
 */
export async function createMarkBridge(knex: Knex, table: string, duties: string): Promise<void> {
  await knex.raw(`CREATE OR REPLACE FUNCTION unqueue_marked_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_ARGV[0] = 'both' AND NEW.published_at IS NOT NULL THEN
        DELETE FROM unpublished_events WHERE feed = TG_TABLE_NAME AND event_id = NEW.id;
      END IF;
      IF NEW.dispatched_at IS NOT NULL THEN
        DELETE FROM undispatched_events WHERE feed = TG_TABLE_NAME AND event_id = NEW.id;
      END IF;
      RETURN NULL;
    END $$`);
  const marks = duties === 'both' ? ['published_at', 'dispatched_at'] : ['dispatched_at'];
  await knex.raw(
    `CREATE TRIGGER ${table}_marked AFTER UPDATE OF ${marks.join(', ')} ON ${table} FOR EACH ROW EXECUTE FUNCTION unqueue_marked_event('${duties}')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  for (const table of Object.keys(queuedFor)) {
    for (const trigger of ['queued', 'forgotten', 'marked']) await knex.raw(`DROP TRIGGER IF EXISTS ${table}_${trigger} ON ${table}`);
  }
  for (const fn of ['queue_new_events', 'forget_deleted_events', 'unqueue_marked_event']) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}()`);
  await knex.raw('DROP TABLE unpublished_events');
  await knex.raw('DROP TABLE undispatched_events');
}
