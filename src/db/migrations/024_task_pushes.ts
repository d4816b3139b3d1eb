import type { Knex } from 'knex';

/**
 * Push invitations (issue 18, docs/tasks.md "Recommendations and pushes"): a task's publisher
 * invites a skill's owner to apply (push-skill), or picks the skill directly (select-skill), once
 * per skill per task. The owner answers: accepting turns the push into an application (and, for a
 * selection, into the accepted one), declining closes it. Never a claim: nothing happens to a
 * skill without its owner's answer.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_pushes', (table) => {
    table.uuid('id').primary();
    table.uuid('task_id').notNullable().references('tasks.id');
    table.uuid('skill_id').notNullable().references('skills.id');
    table.uuid('skill_owner_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.string('kind', 10).notNullable();
    table.text('message').nullable();
    table.bigInteger('price').nullable();
    table.string('status', 10).notNullable();
    table.uuid('application_id').nullable().references('task_applications.id');
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('responded_at', { useTz: true }).nullable();
    table.unique(['task_id', 'skill_id']);
  });
  await knex.raw(`ALTER TABLE task_pushes
    ADD CONSTRAINT task_pushes_kind CHECK (kind IN ('invitation', 'selection')),
    ADD CONSTRAINT task_pushes_status CHECK (status IN ('pending', 'accepted', 'declined')),
    ADD CONSTRAINT task_pushes_price CHECK (price IS NULL OR price >= 0)`);
  await knex.raw('CREATE INDEX task_pushes_owner ON task_pushes (skill_owner_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('task_pushes');
}
