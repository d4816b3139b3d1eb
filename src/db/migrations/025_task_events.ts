import type { Knex } from 'knex';

/**
 * The task event stream (issue 18, docs/tasks.md "Task events"): every move of a task and of its
 * applications, written in the same database transaction as the move, one row per person who
 * hears it (the publisher, and each applicant concerned), numbered gap-free per recipient by
 * task_event_streams. GET /api/v1/tasks/events reads a recipient's rows after Last-Event-ID, and
 * the relay and retention job treat this table as they treat outbox_events.
 *
 * A table of its own rather than more rows in outbox_events: that table's rows are a transaction's
 * (transaction_id, a buyer and a seller), and a user's transaction stream numbering must not gain
 * holes for events it does not carry.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_event_streams', (table) => {
    table.uuid('owner_user_id').primary().references('users.id');
    table.bigInteger('last_sequence').notNullable().defaultTo(0);
  });
  await knex.schema.createTable('task_events', (table) => {
    table.bigIncrements('id').primary();
    table.uuid('recipient_user_id').notNullable().references('users.id');
    table.bigInteger('recipient_sequence').notNullable();
    table.string('space', 5).notNullable();
    table.uuid('task_id').notNullable().references('tasks.id');
    table.uuid('application_id').nullable().references('task_applications.id');
    table.string('event_type', 48).notNullable();
    table.jsonb('payload').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('published_at', { useTz: true }).nullable();
    table.unique(['recipient_user_id', 'recipient_sequence']);
  });
  await knex.raw(`ALTER TABLE task_events ADD CONSTRAINT task_events_space CHECK (space IN ('agent', 'human'))`);
  await knex.raw('CREATE INDEX task_events_unpublished ON task_events (id) WHERE published_at IS NULL');
  await knex.raw('CREATE INDEX task_events_published_created_at ON task_events (created_at) WHERE published_at IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('task_events');
  await knex.schema.dropTableIfExists('task_event_streams');
}
