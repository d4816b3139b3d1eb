import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { formatAmount } from '../../domain/money.ts';
import { combine, normalizedQuality, priceAlignment } from '../../domain/scoring.ts';
import { cosineWithStored, flatTextOf, storedOrComputed } from '../../domain/term-vectors.ts';
import { searchQueryOf } from '../../domain/text.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, errorBody, forbidden, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { findSkill, hallTextCandidates, skillsByIds } from '../../store/skills.ts';
import { findTask, lockTaskRenewingVersion, type TaskRow } from '../../store/tasks.ts';
import { seeSkill, manageTask, authorize } from '../access/index.ts';
import { statusAt } from './task-rows.ts';
import { type EngineDependencies, type Principal, newestFirstPage } from '../common/index.ts';

/**
 * Recommendations and pushes (docs/tasks.md "Recommendations and pushes"): the matcher ranks the
 * active skills of the task's space for its publisher; the publisher invites a skill's owner
 * (push-skill) or picks the skill at a price (select-skill), once per skill per task; the owner
 * answers, or the publisher withdraws a push not answered yet. Accepting an invitation makes an
 * application; accepting a selection makes the application and has it accepted at the selection's
 * price, as the publisher asked, within the ceiling task-acceptance.ts reads for selections.
 */
interface PushRow {
  id: string;
  task_id: string;
  skill_id: string;
  skill_owner_id: string;
  owner_type: string;
  kind: 'invitation' | 'selection';
  message: string | null;
  price: string | null;
  status: 'pending' | 'accepted' | 'declined' | 'withdrawn';
  application_id: string | null;
  bounty_at_selection: string | null;
  /** The person's own key that made a selection, whose agent budget its acceptance is charged to (migration 040). */
  budget_key_id: string | null;
  created_at: Date;
  responded_at: Date | null;
}
const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());
const pushView = (row: PushRow) => ({
  id: row.id,
  task_id: row.task_id,
  skill_id: row.skill_id,
  skill_owner_id: row.skill_owner_id,
  kind: row.kind,
  message: row.message,
  price: row.price === null ? null : formatAmount(row.price),
  status: row.status,
  application_id: row.application_id,
  created_at: iso(row.created_at)!,
  responded_at: iso(row.responded_at),
});

type Apply = (
  principal: Principal,
  taskId: string,
  input: { skill_id: string; message?: string; proposed_price?: bigint },
  request: null,
) => Promise<{ data: { id: string } }>;
type Accept = (principal: Principal, taskId: string, applicationId: string, maxPrice: bigint | undefined, request: null) => Promise<{ data: unknown }>;

/**
 * The selections of a task still waiting for their answer at a price above `amount`: a bounty
 * lowered below one of them is refused (docs/tasks.md "Recommendations and pushes"). Read under
 * the task's lock, which select-skill takes too, so no selection slips in beside the change.
 */
export async function pendingSelectionsAbove(trx: Knex, taskId: string, amount: bigint) {
  const rows = (await trx<PushRow>('task_pushes')
    .where({ task_id: taskId, kind: 'selection', status: 'pending' })
    .where('price', '>', String(amount))
    .orderBy('created_at')
    .select('id', 'price')) as Pick<PushRow, 'id' | 'price'>[];
  return rows.map((row) => ({ push_id: row.id, price: formatAmount(row.price!) }));
}

export function createTaskPushes({ db, now }: EngineDependencies, apply: Apply, accept: Accept) {
  /** The active skills of the task's space, other than the publisher's, best for the task first. */
  async function recommendations(principal: Principal, taskId: string, topK: number) {
    const task = authorize(manageTask, principal, await findTask(db, taskId), 'task');
    const text = { title: task.title, description: task.description, tags: task.tags };
    const query = searchQueryOf(flatTextOf(text), limits.matchQueryTermsMax);
    if (query === '') return { task_id: taskId, candidates: [] };
    const stored = storedOrComputed({ ...text, term_vector: task.term_vector });
    const bounty = task.bounty_amount === null ? null : BigInt(task.bounty_amount);
    const rows = await hallTextCandidates(db, { space: task.owner_type, textQuery: query }, limits.matchCandidatesMax);
    const scored = rows
      .map((row) => ({
        row,
        parts: combine(
          cosineWithStored(new Map(stored.terms), stored.norm, row.term_vector),
          row.price === null ? 1 : priceAlignment(BigInt(row.price), bounty),
          normalizedQuality(Number(row.quality_score)),
        ),
      }))
      .filter((entry) => entry.parts.similarity > 0)
      .sort((left, right) => right.parts.score - left.parts.score || (left.row.id < right.row.id ? -1 : 1));
    const skills = await skillsByIds(
      db,
      scored.map((entry) => entry.row.id),
    );
    const candidates = scored
      .filter((entry) => skills.get(entry.row.id)?.owner_user_id !== task.owner_user_id)
      .slice(0, topK)
      .map(({ row, parts }) => {
        const skill = skills.get(row.id)!;
        return {
          skill_id: skill.id,
          name: skill.name,
          user_id: skill.owner_user_id,
          ut_price: skill.price === null ? null : formatAmount(skill.price),
          category: skill.category,
          ...parts,
        };
      });
    return { task_id: taskId, candidates };
  }

  /** A push (invitation or selection) of an active skill of someone else's, to an open task of the publisher's, once per skill. */
  function push(principal: Principal, taskId: string, input: { skill_id: string; message?: string; price?: bigint }, kind: PushRow['kind']) {
    return withTransaction(db, async ({ trx }) => {
      // The lock renews the task's version: a bounty edit decided in one statement before this
      // selection committed is decided again, and answers 4092 if the selection is above it.
      const task = authorize(manageTask, principal, await lockTaskRenewingVersion(trx, taskId), 'task');
      const status = statusAt(task, now());
      if (status !== 'open')
        throw new AppError('invalid_state_transition', `cannot push a skill to a task that is ${status}`, {
          status,
          action: kind === 'selection' ? 'select' : 'push',
        });
      const skill = authorize(seeSkill, principal, await findSkill(trx, input.skill_id), 'skill');
      if (skill.deleted_at !== null) throw notFound('skill');
      if (skill.owner_user_id === principal.user_id) throw forbidden('push a skill of someone else');
      if (skill.status !== 'active')
        throw new AppError('invalid_state_transition', 'an inactive skill cannot be pushed', { status: skill.status, action: 'push' });
      const price = kind === 'selection' ? (input.price ?? (task.bounty_amount === null ? undefined : BigInt(task.bounty_amount))) : undefined;
      if (kind === 'selection' && price === undefined) {
        throw new AppError('validation_error', 'name the price: the task has no bounty', {
          errors: [{ path: 'body.price', message: 'required when the task has no bounty' }],
        });
      }
      const row = {
        id: randomUUID(),
        task_id: taskId,
        skill_id: skill.id,
        skill_owner_id: skill.owner_user_id,
        owner_type: task.owner_type,
        kind,
        message: input.message ?? null,
        price: price === undefined ? null : String(price),
        status: 'pending',
        application_id: null,
        bounty_at_selection: kind === 'selection' ? task.bounty_held : null,
        budget_key_id: principal.budget_key_id ?? null,
        created_at: now(),
      };
      try {
        const [inserted] = (await trx.transaction((savepoint) => savepoint('task_pushes').insert(row).returning('*'))) as PushRow[];
        return pushView(inserted!);
      } catch (error) {
        if ((error as { code?: string }).code !== '23505') throw error;
        const existing = await trx<PushRow>('task_pushes').where({ task_id: taskId, skill_id: skill.id }).whereNot('status', 'withdrawn').first('id');
        throw new AppError('conflict', 'this skill was pushed to this task already', { push_id: existing?.id ?? null });
      }
    });
  }

  async function mine(principal: Principal, query: { status?: string; page: number; page_size: number; cursor?: string }) {
    const filtered = () => {
      const rows = db<PushRow>('task_pushes').where('skill_owner_id', principal.user_id).where('owner_type', principal.caller_type);
      return query.status ? rows.where('status', query.status) : rows;
    };
    const listed = await newestFirstPage<PushRow>(filtered, query);
    return { ...listed, items: listed.items.map(pushView) };
  }

  /** A task's pushes, newest first: its publisher's to read, whatever their status. */
  async function listForTask(principal: Principal, taskId: string, query: { status?: string; page: number; page_size: number; cursor?: string }) {
    authorize(manageTask, principal, await findTask(db, taskId), 'task');
    const filtered = () => {
      const rows = db<PushRow>('task_pushes').where('task_id', taskId);
      return query.status ? rows.where('status', query.status) : rows;
    };
    const listed = await newestFirstPage<PushRow>(filtered, query);
    return { ...listed, items: listed.items.map(pushView) };
  }

  /**
   * The publisher takes back a push its skill's owner has not answered (pending -> withdrawn,
   * compare-and-set under the push's lock, so an answer and a withdrawal cannot both win). The
   * owner sees it withdrawn in pushes/mine and an answer is then 4090. A push is known to the
   * publisher and the skill's owner only: the owner may not withdraw (4030), anyone else 4040.
   */
  function withdraw(principal: Principal, taskId: string, pushId: string) {
    return withTransaction(db, async ({ trx }) => {
      const row = (await trx<PushRow>('task_pushes').where({ id: pushId, task_id: taskId }).forNoKeyUpdate().first()) as PushRow | undefined;
      if (!row || row.owner_type !== principal.caller_type) throw notFound('push');
      const task = (await findTask(trx, taskId))!;
      if (task.owner_user_id !== principal.user_id) {
        if (row.skill_owner_id === principal.user_id) throw forbidden("only the task's publisher can withdraw a push");
        throw notFound('push');
      }
      if (row.status !== 'pending')
        throw new AppError('invalid_state_transition', `cannot withdraw a push that is ${row.status}`, { status: row.status, action: 'withdraw' });
      const [withdrawn] = (await trx('task_pushes')
        .where({ id: pushId, status: 'pending' })
        .update({ status: 'withdrawn', responded_at: now() })
        .returning('*')) as PushRow[];
      return pushView(withdrawn!);
    });
  }

  /** The push, claimed for an answer by the skill's owner: pending -> answered, compare-and-set. */
  async function claimAnswer(trx: Knex, principal: Principal, pushId: string, status: 'accepted' | 'declined'): Promise<PushRow> {
    const row = (await trx<PushRow>('task_pushes').where({ id: pushId }).forNoKeyUpdate().first()) as PushRow | undefined;
    if (!row || row.owner_type !== principal.caller_type) throw notFound('push');
    if (row.skill_owner_id !== principal.user_id) {
      const task = (await trx<TaskRow>('tasks').where({ id: row.task_id }).first('owner_user_id')) as TaskRow | undefined;
      if (task?.owner_user_id === principal.user_id) throw forbidden("only the skill's owner can answer a push");
      throw notFound('push');
    }
    if (row.status !== 'pending')
      throw new AppError('invalid_state_transition', `cannot answer a push that is ${row.status}`, { status: row.status, action: 'respond' });
    if (status === 'accepted') {
      // Past the task's deadline nothing is taken on, swept or not; declining still closes the push.
      const task = (await findTask(trx, row.task_id))!;
      if (statusAt(task, now()) === 'expired')
        throw new AppError('invalid_state_transition', 'cannot accept a push to a task past its deadline', { status: 'expired', action: 'respond' });
    }
    const [answered] = (await trx('task_pushes').where({ id: pushId, status: 'pending' }).update({ status, responded_at: now() }).returning('*')) as PushRow[];
    return answered!;
  }

  /**
   * The owner's answer. Declining closes the push. Accepting applies with the skill (at the
   * selection's price, if a selection) and, for a selection, has the publisher's acceptance run
   * at that price: a refusal there (4020: the publisher's money is short) leaves the application
   * pending for the publisher, and the answer says so.
   */
  async function respond(principal: Principal, pushId: string, decision: 'accept' | 'decline', message?: string) {
    if (decision === 'decline')
      return {
        push: pushView(await withTransaction(db, ({ trx }) => claimAnswer(trx, principal, pushId, 'declined'))),
        application_id: null,
        accepted: null,
        acceptance_error: null,
      };
    const pending = await withTransaction(db, async ({ trx }) => claimAnswer(trx, principal, pushId, 'accepted'));
    let application: { data: { id: string } };
    try {
      application = await apply(
        principal,
        pending.task_id,
        { skill_id: pending.skill_id, message, ...(pending.price === null ? {} : { proposed_price: BigInt(pending.price) }) },
        null,
      );
    } catch (error) {
      // The task closed or the skill changed since the push: the push stays open for another answer.
      await db('task_pushes').where({ id: pushId, status: 'accepted', application_id: null }).update({ status: 'pending', responded_at: null });
      throw error;
    }
    await db('task_pushes').where({ id: pushId }).update({ application_id: application.data.id });
    const push = pushView({ ...pending, application_id: application.data.id });
    if (pending.kind !== 'selection') return { push, application_id: application.data.id, accepted: null, acceptance_error: null };
    const task = (await findTask(db, pending.task_id))!;
    // The publisher, spending within the agent budget of the key that made the selection, if a person's own.
    const publisher: Principal = {
      user_id: task.owner_user_id,
      caller_type: task.owner_type,
      platform: null,
      api_key_id: null,
      budget_key_id: pending.budget_key_id,
    };
    try {
      // No max_price: the acceptance reads the selection's own ceiling (its price while the bounty
      // it was made against stands, else the bounty held) in the transaction that freezes the money.
      const accepted = await accept(publisher, pending.task_id, application.data.id, undefined, null);
      return { push, application_id: application.data.id, accepted: accepted.data, acceptance_error: null };
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return { push, application_id: application.data.id, accepted: null, acceptance_error: errorBody(error) };
    }
  }

  return {
    recommendations,
    pushSkill: (principal: Principal, taskId: string, input: { skill_id: string; message?: string }) => push(principal, taskId, input, 'invitation'),
    selectSkill: (principal: Principal, taskId: string, input: { skill_id: string; message?: string; price?: bigint }) =>
      push(principal, taskId, input, 'selection'),
    pushesMine: mine,
    pushesOfTask: listForTask,
    withdrawPush: withdraw,
    respond,
  };
}
