import type { Knex } from 'knex';

/**
 * A task that ends (closed, cancelled, expired) now rejects its pending applications in the same
 * commit (store/change-tasks.ts). Applications left pending by tasks that ended before that are
 * rejected here, as of when their task ended, so that they stop counting against their
 * applicants' caps and cannot be decided any more. One statement over the ended tasks' pending
 * applications (the partial index on live applications finds them).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE task_applications AS application SET status = 'rejected', decided_at = COALESCE(task.ended_at, task.updated_at)
      FROM tasks AS task
     WHERE application.task_id = task.id AND application.status = 'pending' AND task.status IN ('closed', 'cancelled', 'expired')`);
}

export async function down(): Promise<void> {
  // Which rejections this made is not recorded; they stay.
}
