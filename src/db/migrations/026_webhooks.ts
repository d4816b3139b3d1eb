import type { Knex } from 'knex';

/**
 * Webhooks (issue 19, docs/webhooks.md): subscriptions of a user to kinds of events, and the
 * deliveries of those events to them, with every attempt.
 *
 * The dispatcher (engine/deliveries/webhook-dispatch.ts) reads the two outbox tables (outbox_events and
 * task_events) and marks each row `dispatched_at` in the same database transaction as the
 * deliveries it made from it: every committed event is looked at once, whatever instance crashes.
 * Rows written before this migration count as dispatched (a new subscription hears what happens
 * from now on), which the column's default records without rewriting the table; the default is
 * then dropped, so that new rows wait for the dispatcher.
 */
export async function up(knex: Knex): Promise<void> {
  for (const table of ['outbox_events', 'task_events']) {
    await knex.raw(`ALTER TABLE ${table} ADD COLUMN dispatched_at timestamptz DEFAULT now()`);
    await knex.raw(`ALTER TABLE ${table} ALTER COLUMN dispatched_at DROP DEFAULT`);
    await knex.raw(`CREATE INDEX ${table}_undispatched ON ${table} (id) WHERE dispatched_at IS NULL`);
  }
  await knex.schema.createTable('webhook_subscriptions', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.text('url').notNullable();
    table.specificType('event_types', 'text[]').notNullable();
    table.uuid('transaction_id').nullable();
    table.uuid('task_id').nullable();
    table.text('description').nullable();
    table.text('secret').notNullable();
    table.text('previous_secret').nullable();
    table.timestamp('previous_secret_expires_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_owner_type CHECK (owner_type IN ('agent', 'human'))`);
  await knex.raw('CREATE INDEX webhook_subscriptions_owner ON webhook_subscriptions (owner_user_id, created_at DESC, id DESC) WHERE deleted_at IS NULL');

  await knex.schema.createTable('webhook_deliveries', (table) => {
    table.uuid('id').primary();
    table.uuid('subscription_id').notNullable().references('webhook_subscriptions.id').onDelete('CASCADE');
    table.string('source', 12).notNullable();
    table.bigInteger('source_event_id').notNullable();
    /** Deliveries of one subscription with the same key go out one at a time, in source_event_id order. */
    table.text('ordering_key').notNullable();
    table.string('event_type', 48).notNullable();
    table.jsonb('body').notNullable();
    table.string('status', 10).notNullable();
    table.integer('attempts').notNullable().defaultTo(0);
    table.timestamp('next_attempt_at', { useTz: true }).notNullable();
    table.timestamp('lease_until', { useTz: true }).nullable();
    table.integer('last_status_code').nullable();
    table.text('last_error').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('finished_at', { useTz: true }).nullable();
  });
  // One delivery per event per subscription (pings, made on request, are each their own).
  await knex.raw(`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (subscription_id, source, source_event_id) WHERE source <> 'ping'`);
  await knex.raw(`ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'sending', 'delivered', 'failed'))`);
  await knex.raw(`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'sending')`);
  await knex.raw(
    `CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (subscription_id, ordering_key, source_event_id) WHERE status IN ('pending', 'sending')`,
  );
  await knex.raw('CREATE INDEX webhook_deliveries_listing ON webhook_deliveries (subscription_id, created_at DESC, id DESC)');
  await knex.raw('CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at) WHERE finished_at IS NOT NULL');

  await knex.schema.createTable('webhook_attempts', (table) => {
    table.uuid('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    table.integer('number').notNullable();
    table.timestamp('started_at', { useTz: true }).notNullable();
    table.integer('duration_ms').notNullable();
    table.integer('status_code').nullable();
    table.text('error').nullable();
    table.primary(['delivery_id', 'number']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_attempts');
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_subscriptions');
  for (const table of ['outbox_events', 'task_events']) {
    await knex.raw(`DROP INDEX IF EXISTS ${table}_undispatched`);
    await knex.raw(`ALTER TABLE ${table} DROP COLUMN IF EXISTS dispatched_at`);
  }
}
