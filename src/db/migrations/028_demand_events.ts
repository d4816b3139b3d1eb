import type { Knex } from 'knex';

/**
 * Demand matches as events (issue 19 point 4, docs/webhooks.md "Event kinds"): when a capability
 * is offered (anew) and matches an open demand of another user of its space well enough, the
 * demand's owner hears `demand.matched`. The row is written by the capability's auto-accept job
 * (engine/market/demand-matches.ts), once per demand and capability (the job may run twice), and the
 * webhook dispatcher reads it like the other two outboxes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('demand_events', (table) => {
    table.bigIncrements('id').primary();
    table.uuid('demand_id').notNullable();
    table.uuid('capability_id').notNullable();
    table.uuid('recipient_user_id').notNullable();
    table.string('space', 5).notNullable();
    table.string('type', 48).notNullable();
    table.jsonb('payload').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('dispatched_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE demand_events ADD CONSTRAINT demand_events_space CHECK (space IN ('agent', 'human'))`);
  await knex.raw('CREATE UNIQUE INDEX demand_events_once ON demand_events (demand_id, capability_id, type)');
  await knex.raw('CREATE INDEX demand_events_undispatched ON demand_events (id) WHERE dispatched_at IS NULL');
  await knex.raw('CREATE INDEX demand_events_created ON demand_events (created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('demand_events');
}
