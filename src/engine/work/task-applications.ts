import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { nextApplicationState, offerTermsProblem, offeredTotal } from '../../domain/tasks.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, forbidden, notFound } from '../../errors.ts';
import type { CreateApplicationInput } from '../../schemas/tasks.ts';
import { findSkill } from '../../store/skills.ts';
import { lockTaskRenewingVersion, type TaskRow, taskColumns } from '../../store/tasks.ts';
import { seeSkill, manageTask, seeTask, authorize } from '../access/index.ts';
import { type EngineDependencies, type Principal, newestFirstPage } from '../common/index.ts';
import type { Idempotency, IdempotencyRequest } from '../money/index.ts';
import { type ApplicationRow, applicationView } from './application-rows.ts';
import type { TaskEvents } from './task-events.ts';
import { statusAt } from './task-rows.ts';
import { limits } from '../../limits.ts';
import { formatAmount } from '../../domain/money.ts';
import { checkApplicantCaps } from './applicant-caps.ts';

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

/**
 * Applications to tasks (docs/tasks.md "Applications"): a skill's owner applies with it to an open
 * task of the same space; the publisher sees a task's applications and rejects them; the
 * applicant withdraws. Accepting (the task matched, an escrow transaction) is task-acceptance.ts.
 * Every move is also an event on the publisher's and the applicant's task streams.
 */

export function createTaskApplications({ db, now }: EngineDependencies, idempotency: Idempotency, events: TaskEvents) {
  /**
   * The task, locked FOR NO KEY UPDATE: a close or an expiry waits for the application (and the
   * other way round), and applies to one task take turns, so that the count of its pending
   * applications cannot be read by two applies at once and both pass the cap (FOR SHARE let them).
   * The lock renews the row's version, so that a close decided in one statement before the
   * application committed is decided again with the new applicant among those it tells.
   */
  const lockTask = lockTaskRenewingVersion;

  function apply(principal: Principal, taskId: string, input: CreateApplicationInput, request: IdempotencyRequest | null) {
    const termsProblem = offerTermsProblem(input);
    if (termsProblem) return Promise.reject(new AppError('validation_error', 'request failed validation', { errors: [termsProblem] }));
    return idempotency.run(principal, request, 201, async (unit) => {
      const { trx } = unit;
      const task = authorize(seeTask, principal, await lockTask(trx, taskId), 'task');
      if (task.owner_user_id === principal.user_id) throw forbidden('you cannot apply to your own task');
      const status = statusAt(task, now());
      if (status !== 'open') throw new AppError('invalid_state_transition', `cannot apply to a task that is ${status}`, { status, action: 'apply' });
      const [counted] = (await trx('task_applications').where({ task_id: taskId, status: 'pending' }).count('* as pending')) as { pending: string | number }[];
      if (Number(counted?.pending ?? 0) >= limits.taskPendingApplicationsMax) {
        throw new AppError(
          'conflict',
          `this task has ${limits.taskPendingApplicationsMax} pending applications, the most it takes: try again once the publisher has answered some`,
          { pending_applications_max: limits.taskPendingApplicationsMax },
        );
      }
      const skill = authorize(seeSkill, principal, await findSkill(trx, input.skill_id), 'skill');
      if (skill.deleted_at !== null) throw notFound('skill');
      if (skill.owner_user_id !== principal.user_id) throw forbidden('apply with a skill of your own');
      if (skill.status !== 'active')
        throw new AppError('invalid_state_transition', 'an inactive skill cannot apply to tasks', { status: skill.status, action: 'apply' });
      await checkApplicantCaps(trx, principal, taskId);
      const offered = offeredTotal(input);
      if (offered !== undefined && offered > limits.amountMinorUnitsMax) {
        const most = formatAmount(limits.amountMinorUnitsMax);
        throw new AppError('validation_error', 'request failed validation', {
          errors: [{ path: 'body.proposed_quantity', message: `proposed_unit_price × proposed_quantity must be at most ${most}` }],
        });
      }
      const row = {
        id: randomUUID(),
        task_id: taskId,
        skill_id: skill.id,
        applicant_id: principal.user_id,
        owner_type: principal.caller_type,
        message: input.message ?? null,
        proposed_price: offered?.toString() ?? null,
        proposed_billing_model: input.proposed_billing_model ?? null,
        proposed_unit_price: input.proposed_unit_price === undefined ? null : String(input.proposed_unit_price),
        proposed_quantity: input.proposed_quantity ?? null,
        status: 'pending',
        applied_at: now(),
      };
      try {
        // In a savepoint: a second live application of the skill fails the insert alone, not the transaction.
        const [inserted] = (await trx.transaction((savepoint) => savepoint('task_applications').insert(row).returning('*'))) as ApplicationRow[];
        await events.applicationsMoved(unit, task, [{ application: inserted!, action: 'apply', previousStatus: null }]);
        return applicationView(inserted!);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        const live = await trx<ApplicationRow>('task_applications')
          .where({ task_id: taskId, skill_id: skill.id })
          .whereIn('status', ['pending', 'accepted'])
          .first('id');
        throw new AppError('conflict', 'this skill has a live application for this task already', { application_id: live?.id ?? null });
      }
    });
  }

  async function page(query: { page: number; page_size: number; cursor?: string; status?: string }, where: (builder: Knex.QueryBuilder) => Knex.QueryBuilder) {
    const filtered = () => {
      const rows = where(db('task_applications'));
      return query.status ? rows.where('status', query.status) : rows;
    };
    const listed = await newestFirstPage<ApplicationRow>(filtered, query, { createdAt: 'applied_at' });
    return { ...listed, items: listed.items.map(applicationView) };
  }

  /** A task's applications: its publisher's to read. */
  async function listForTask(principal: Principal, taskId: string, query: { page: number; page_size: number; cursor?: string; status?: string }) {
    authorize(
      manageTask,
      principal,
      (await db<TaskRow>('tasks')
        .where({ id: taskId })
        .first(...taskColumns)) as TaskRow | undefined,
      'task',
    );
    return page(query, (builder) => builder.where('task_id', taskId));
  }

  function mine(principal: Principal, query: { page: number; page_size: number; cursor?: string; status?: string }) {
    return page(query, (builder) => builder.where('applicant_id', principal.user_id).where('owner_type', principal.caller_type));
  }

  /**
   * The applicant withdraws, or the publisher rejects, a pending application. An application is
   * known to its applicant and to the task's publisher only (4040 for anyone else); each may take
   * only their own action (4030).
   */
  function decide(principal: Principal, taskId: string, applicationId: string, action: 'withdraw' | 'reject') {
    return withTransaction(db, async (unit) => {
      const { trx } = unit;
      // The task first, written as it is locked, as an application does: an acceptance decided before
      // this withdrawal or rejection committed fails its compare-and-set and is decided again
      // (task-acceptance.ts), and so does a close that named this applicant.
      const task = await lockTask(trx, taskId);
      const application = (await trx<ApplicationRow>('task_applications').where({ id: applicationId, task_id: taskId }).forNoKeyUpdate().first()) as
        ApplicationRow | undefined;
      if (!task || !application || task.owner_type !== principal.caller_type) throw notFound('application');
      const isPublisher = task.owner_user_id === principal.user_id;
      const isApplicant = application.applicant_id === principal.user_id;
      if (!isPublisher && !isApplicant) throw notFound('application');
      if (action === 'withdraw' && !isApplicant) throw forbidden('only the applicant can withdraw an application');
      if (action === 'reject' && !isPublisher) throw forbidden("only the task's publisher can reject an application");
      const to = nextApplicationState(application.status, action);
      const [changed] = (await trx('task_applications')
        .where({ id: applicationId, status: application.status })
        .update({ status: to, decided_at: now() })
        .returning('*')) as ApplicationRow[];
      await events.applicationsMoved(unit, task, [{ application: changed!, action, previousStatus: application.status }]);
      return applicationView(changed!);
    });
  }

  return {
    apply,
    listForTask,
    mine,
    withdraw: (principal: Principal, taskId: string, id: string) => decide(principal, taskId, id, 'withdraw'),
    reject: (principal: Principal, taskId: string, id: string) => decide(principal, taskId, id, 'reject'),
  };
}
