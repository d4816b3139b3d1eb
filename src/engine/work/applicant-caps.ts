import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import { type Principal, capReached, lockAccount } from '../common/index.ts';

/**
 * The caps on one applicant's pending applications (issue 28 point 7, docs/tasks.md
 * "Applications"): at most limits.taskApplicationsPerApplicantMax on one task, whatever skills the
 * applicant has, and limits.liveApplicationsPerApplicantMax on all tasks of the space, so that one
 * account cannot fill a task's places and crowd out real applicants.
 *
 * Called inside the apply's transaction before the insert. The applicant's user row is locked
 * first, so one account's parallel applies are counted one after the other and cannot pass either
 * cap; different applicants do not wait for each other. Both counts read the partial index of
 * pending applications per applicant (migration 031), a few entries at most.
 */
export async function checkApplicantCaps(trx: Knex, principal: Principal, taskId: string): Promise<void> {
  await lockAccount(trx, principal.user_id);
  const [counted] = (await trx('task_applications')
    .where({ applicant_id: principal.user_id, owner_type: principal.caller_type, status: 'pending' })
    .select(trx.raw('count(*) as overall'), trx.raw('count(*) filter (where task_id = ?) as on_task', [taskId]))) as {
    overall: string | number;
    on_task: string | number;
  }[];
  if (Number(counted?.on_task ?? 0) >= limits.taskApplicationsPerApplicantMax) {
    const detail = `you have ${limits.taskApplicationsPerApplicantMax} pending applications on this task, the most one account may (applications_per_task_max): withdraw one to apply with another skill`;
    throw capReached(detail, { applications_per_task_max: limits.taskApplicationsPerApplicantMax });
  }
  if (Number(counted?.overall ?? 0) >= limits.liveApplicationsPerApplicantMax) {
    const detail = `you have ${limits.liveApplicationsPerApplicantMax} pending applications in this space, the most one account may (live_applications_max): apply again once some are answered or withdrawn`;
    throw capReached(detail, { live_applications_max: limits.liveApplicationsPerApplicantMax });
  }
}
