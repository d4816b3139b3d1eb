import type { Knex } from 'knex';

/**
 * Pushes the publisher can take back, and selections whose price cannot outlive their bounty
 * (issue 28, point 1; docs/tasks.md "Recommendations and pushes").
 *
 * - `withdrawn`: the publisher withdraws a push its skill's owner has not answered yet.
 * - Once per skill per task now counts the live pushes only (pending, accepted, declined): a
 *   withdrawn one does not stop the publisher from selecting the skill again at another price.
 * - `bounty_at_selection`: the bounty the task held when the publisher made a selection. The
 *   selection's price stands while the task still holds at least that much; once the bounty is
 *   lowered below it, accepting charges no more than the bounty held (a price the publisher named
 *   above the bounty was agreed against that bounty, not against a smaller one). Null for the
 *   selections made before this migration and for invitations: their ceiling is the bounty held.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE task_pushes
    DROP CONSTRAINT task_pushes_status,
    ADD CONSTRAINT task_pushes_status CHECK (status IN ('pending', 'accepted', 'declined', 'withdrawn')),
    ADD COLUMN bounty_at_selection bigint NULL CHECK (bounty_at_selection IS NULL OR bounty_at_selection >= 0)`);
  await knex.raw('ALTER TABLE task_pushes DROP CONSTRAINT task_pushes_task_id_skill_id_unique');
  await knex.raw(`CREATE UNIQUE INDEX task_pushes_live_skill ON task_pushes (task_id, skill_id) WHERE status <> 'withdrawn'`);
  // The publisher's list of a task's pushes, newest first.
  await knex.raw('CREATE INDEX task_pushes_task ON task_pushes (task_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS task_pushes_task');
  await knex.raw('DROP INDEX IF EXISTS task_pushes_live_skill');
  await knex('task_pushes').where({ status: 'withdrawn' }).delete();
  await knex.raw(`ALTER TABLE task_pushes
    ADD CONSTRAINT task_pushes_task_id_skill_id_unique UNIQUE (task_id, skill_id),
    DROP COLUMN bounty_at_selection,
    DROP CONSTRAINT task_pushes_status,
    ADD CONSTRAINT task_pushes_status CHECK (status IN ('pending', 'accepted', 'declined'))`);
}
