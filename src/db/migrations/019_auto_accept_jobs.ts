import type { Knex } from 'knex';

/**
 * Auto-accept scoring of a newly offered capability runs off the request path (issue 15,
 * docs/decisions/matching.md "Auto-accept as a job"): the write that offers a capability records a job in
 * the same database transaction, and a background job on any instance claims it (SKIP LOCKED),
 * scores the open auto-accept demands against it and deletes it. A claim older than the stale
 * window (its instance died) is taken again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('auto_accept_jobs', (table) => {
    table.uuid('capability_id').primary().references('capabilities.id');
    table.timestamp('due_at', { useTz: true }).notNullable();
    table.timestamp('claimed_at', { useTz: true }).nullable();
    table.integer('attempts').notNullable().defaultTo(0);
  });
  await knex.raw('CREATE INDEX auto_accept_jobs_due ON auto_accept_jobs (due_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('auto_accept_jobs');
}
