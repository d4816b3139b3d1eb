import { withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { lockTask } from '../../store/tasks.ts';
import { manageTask, authorize } from '../access/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import type { SkillEngine } from './skills.ts';

/**
 * The publisher of a settled task rates the skill it was matched with, once (docs/tasks.md
 * "Rating"): the rating and the skill's new quality score commit together (skills.recordRating).
 * The transaction's price is what the rating cost: a rating of a transaction that moved no money
 * is stored but does not count towards the score (docs/skills.md "Ratings and quality").
 */
export function createTaskRating({ db }: EngineDependencies, skills: SkillEngine) {
  function rate(principal: Principal, taskId: string, input: { score: number; comment?: string }) {
    return withTransaction(db, async ({ trx }) => {
      const task = authorize(manageTask, principal, await lockTask(trx, taskId), 'task');
      const settled = task.transaction_id
        ? ((await trx('transactions').where({ id: task.transaction_id }).first('status', 'price')) as { status: string; price: string } | undefined)
        : undefined;
      if (task.status !== 'matched' || settled?.status !== 'settled') {
        throw new AppError('invalid_state_transition', 'a task is rated once its transaction is settled', {
          status: task.status,
          action: 'rate',
          transaction_status: settled?.status ?? null,
        });
      }
      const comment = input.comment ?? null;
      const recorded = await skills.recordRating(
        {
          skill_id: task.matched_skill_id!,
          rater_user_id: principal.user_id,
          task_id: taskId,
          score: input.score,
          comment,
          paid_amount: BigInt(settled.price),
        },
        trx,
      );
      if (!recorded) throw new AppError('conflict', 'this task has been rated already', { task_id: taskId });
      const { skill, counted } = recorded;
      return {
        task_id: taskId,
        skill_id: skill.id,
        score: input.score,
        comment,
        counted,
        quality_score: Number(skill.quality_score),
        rating_count: skill.rating_count,
      };
    });
  }
  return { rate };
}
