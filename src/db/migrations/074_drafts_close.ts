import type { Knex } from 'knex';

/**
 * A draft may be closed (docs/tasks.md, the state table: draft -> close -> closed), but
 * `tasks_open_is_published` asked every status other than draft for a `published_at`, which a
 * draft never had: its close failed the constraint and answered 5000. The rule now says what it
 * meant, that a task which was open (open, matched, expired, cancelled) was published; a closed
 * task may have been a draft. The new rule is weaker than the old, so every row already meets it:
 * it is added NOT VALID and validated after, which reads the table without holding up writes.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_open_is_published');
  await knex.raw(`ALTER TABLE tasks ADD CONSTRAINT tasks_open_is_published CHECK (status IN ('draft', 'closed') OR published_at IS NOT NULL) NOT VALID`);
  await knex.raw('ALTER TABLE tasks VALIDATE CONSTRAINT tasks_open_is_published');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_open_is_published');
  await knex.raw(`ALTER TABLE tasks ADD CONSTRAINT tasks_open_is_published CHECK (status = 'draft' OR published_at IS NOT NULL) NOT VALID`);
}
