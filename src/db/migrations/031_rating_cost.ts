import type { Knex } from 'knex';

/**
 * Ratings that cost something, and caps per account (issue 28 points 4 and 7, docs/skills.md).
 *
 * A rating is still stored for every rated task, but it counts towards the skill's quality score
 * only when its transaction moved money and it is the rater's first counted rating of the skill
 * within the window (limits.ts). `counted` says which; the rows written before this migration
 * were all counted (they are in rating_count). The partial index answers "has this rater a
 * counted rating of this skill since then?" from a few index entries when the rating is written.
 *
 * `skills.ratings_total` is every stored rating, counted or not: the ratings list shows them all,
 * and reads its total from the row instead of counting the ratings on every page.
 *
 * The applicant caps count an applicant's pending applications: the partial index holds only
 * those (at most liveApplicationsPerApplicantMax per applicant and space), so both counts read a
 * few entries however many applications the applicant made before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE skill_ratings ADD COLUMN counted boolean NOT NULL DEFAULT true');
  await knex.raw('ALTER TABLE skill_ratings ALTER COLUMN counted DROP DEFAULT');
  await knex.raw('CREATE INDEX skill_ratings_counted_recent ON skill_ratings (skill_id, rater_user_id, created_at DESC) WHERE counted');
  await knex.raw('ALTER TABLE skills ADD COLUMN ratings_total integer NOT NULL DEFAULT 0');
  await knex.raw('UPDATE skills SET ratings_total = rating_count WHERE rating_count > 0');
  await knex.raw('ALTER TABLE skills ADD CONSTRAINT skills_ratings_total CHECK (ratings_total >= rating_count)');
  await knex.raw(`CREATE INDEX task_applications_applicant_pending ON task_applications (applicant_id, owner_type, task_id) WHERE status = 'pending'`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS task_applications_applicant_pending');
  await knex.raw('ALTER TABLE skills DROP CONSTRAINT IF EXISTS skills_ratings_total');
  await knex.raw('ALTER TABLE skills DROP COLUMN IF EXISTS ratings_total');
  await knex.raw('DROP INDEX IF EXISTS skill_ratings_counted_recent');
  await knex.raw('ALTER TABLE skill_ratings DROP COLUMN IF EXISTS counted');
}
