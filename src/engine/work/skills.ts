import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { actionTowards, nextSkillStatus, qualityScoreOf, ratingScoreMax, ratingScoreMin, type SkillSource } from '../../domain/skills.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { CreateSkillInput, SkillDraft, SkillView, UpdateSkillInput } from '../../schemas/skills.ts';
import { findSkill, ownSkillsQuery, type SkillRow, skillColumns } from '../../store/skills.ts';
import { manageSkill, seeSkill, authorize } from '../access/index.ts';
import {
  decodeCursor,
  encodeCursor,
  isoTimestamp,
  uuidText,
  type EngineDependencies,
  type Principal,
  newestFirstPage,
  capReached,
  lockAccount,
} from '../common/index.ts';
import type { Idempotency, IdempotencyRequest, Outcome } from '../money/index.ts';
import { changedSkillColumns, newSkillRow, type RatingRow, ratingView, skillView } from './skill-rows.ts';
import type { ApplicationRow } from './application-rows.ts';
import type { TaskEvents } from './task-events.ts';
import { lockTaskRenewingVersion } from '../../store/tasks.ts';

/** A rating as the tasks issue writes it: once per rater and task. */
export interface RatingInput {
  skill_id: string;
  rater_user_id: string;
  task_id: string | null;
  score: number;
  comment?: string | null;
  /** Minor units the rated (settled) transaction moved; 0 when it moved none. */
  paid_amount: bigint;
}

/** Skills (docs/skills.md): create, read, list one's own, change, delete, and the ratings. */
export function createSkillEngine({ db, now }: EngineDependencies, idempotency: Idempotency, taskEvents: Pick<TaskEvents, 'applicationsMoved'>) {
  /** Creating is keyed like every state-changing POST: a retried request creates one skill. */
  function create(principal: Principal, input: CreateSkillInput, request: IdempotencyRequest | null): Promise<Outcome<SkillView>> {
    return idempotency.run(principal, request, 201, async ({ trx }) => skillView(await insert(trx, principal, input, 'manual')));
  }

  /**
   * Every way a skill is made (create, MCP, a confirmed candidate) inserts here, so the cap per
   * user and space holds for all. The owner's live skills are counted under a lock on the owner's
   * user row: parallel creates of one account wait for each other and cannot pass the cap.
   */
  async function insert(trx: Knex, principal: Principal, draft: SkillDraft, source: SkillSource, candidateId: string | null = null): Promise<SkillRow> {
    await lockAccount(trx, principal.user_id);
    const [counted] = (await ownSkillsQuery(trx, principal.user_id, principal.caller_type).count('* as count')) as { count: string | number }[];
    if (Number(counted?.count ?? 0) >= limits.skillsPerUserMax) {
      const detail = `you have ${limits.skillsPerUserMax} skills in this space, the most one account keeps (skills_max): delete one first`;
      throw capReached(detail, { skills_max: limits.skillsPerUserMax });
    }
    const [row] = (await trx('skills')
      .insert(newSkillRow(principal, draft, source, now(), candidateId))
      .returning([...skillColumns])) as SkillRow[];
    return row!;
  }

  /** Readable within its space whatever its status, deleted too: tasks and ratings name it. */
  async function get(principal: Principal, id: string): Promise<SkillView> {
    return skillView(authorize(seeSkill, principal, await findSkill(db, id), 'skill'));
  }

  /** The caller's own skills of the caller's space, newest first; keyset with a cursor. */
  async function listMine(principal: Principal, query: { status?: string; page: number; page_size: number; cursor?: string }) {
    const filtered = () => ownSkillsQuery(db, principal.user_id, principal.caller_type, query.status);
    const listed = await newestFirstPage<SkillRow>(filtered, query, { select: skillColumns });
    return { ...listed, items: listed.items.map(skillView) };
  }

  /**
   * A partial update by the owner on the row locked for the decision. `status` moves through the
   * table of domain/skills.ts; naming the status the skill has already is no change.
   */
  function update(principal: Principal, id: string, patch: UpdateSkillInput): Promise<SkillView> {
    return withTransaction(db, async ({ trx }) => {
      const row = authorize(manageSkill, principal, await lockSkill(trx, id), 'skill');
      const { status, ...fields } = patch;
      const columns = changedSkillColumns(row, fields);
      const action = status === undefined ? null : actionTowards(row.status, status);
      if (action) columns.status = nextSkillStatus(row.status, action);
      const [updated] = (await trx('skills')
        .where({ id })
        .update({ ...columns, updated_at: now() })
        .returning([...skillColumns])) as SkillRow[];
      return skillView(updated!);
    });
  }

  /**
   * Soft delete by the owner: the row stays for the tasks and ratings that name it; a second delete
   * is 4040. Its pending applications are withdrawn with it (each told, as a withdrawal is): left
   * pending they would count against the owner's caps and could never be accepted. Their tasks are
   * locked first, in id order, then the skill: the order every task path takes (task, then what
   * hangs off it), and each task's version renewed so that a close or an accept decided meanwhile
   * is decided again.
   */
  function remove(principal: Principal, id: string) {
    return withTransaction(db, async (unit) => {
      const { trx } = unit;
      const taskIds = ((await trx('task_applications').where({ skill_id: id, status: 'pending' }).distinct('task_id')) as { task_id: string }[])
        .map((row) => row.task_id)
        .sort();
      const tasks = [];
      for (const taskId of taskIds) tasks.push(await lockTaskRenewingVersion(trx, taskId));
      authorize(manageSkill, principal, await lockSkill(trx, id), 'skill');
      const at = now();
      await trx('skills').where({ id }).update({ deleted_at: at, updated_at: at });
      const withdrawn = (await trx('task_applications')
        .where({ skill_id: id, status: 'pending' })
        .whereIn('task_id', taskIds)
        .update({ status: 'withdrawn', decided_at: at })
        .returning('*')) as ApplicationRow[];
      for (const task of tasks) {
        const moves = withdrawn.filter((application) => task && application.task_id === task.id);
        if (task && moves.length > 0)
          await taskEvents.applicationsMoved(
            unit,
            task,
            moves.map((application) => ({ application, action: 'withdraw', previousStatus: 'pending' })),
          );
      }
      return { id, deleted: true as const, deleted_at: at.toISOString() };
    });
  }

  const lockSkill = (trx: Knex, id: string) =>
    trx<SkillRow>('skills')
      .where({ id })
      .forNoKeyUpdate()
      .first(...skillColumns) as Promise<SkillRow | undefined>;

  /** The ratings of a skill readable by the caller, newest first, with the average, count and quality. */
  async function ratings(principal: Principal, id: string, query: { page: number; page_size: number; cursor?: string }) {
    const skill = authorize(seeSkill, principal, await findSkill(db, id), 'skill');
    const page = db<RatingRow>('skill_ratings')
      .where({ skill_id: id })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(query.page_size + 1);
    if (query.cursor) {
      const [createdAt, ratingId] = decodeCursor(query.cursor, [isoTimestamp, uuidText]);
      page.whereRaw('(created_at, id) < (?::timestamptz, ?::uuid)', [createdAt!, ratingId!]);
    } else {
      page.offset((query.page - 1) * query.page_size);
    }
    const listed = pageOf(await page, query, skill.ratings_total, (row) => [new Date(row.created_at).toISOString(), row.id]);
    const view = skillView(skill);
    return {
      ...listed,
      items: listed.items.map(ratingView),
      skill_id: id,
      average: view.rating_average,
      count: skill.rating_count,
      quality_score: view.quality_score,
    };
  }

  /**
   * Records a rating (the tasks issue calls this when a task is rated) and the skill's new counts
   * and quality score in one transaction, on the skill row locked first, so concurrent ratings
   * add up. The same rater rating the same task again changes nothing and answers null.
   *
   * Every rating is stored; it counts towards the quality score only when it costs something
   * (issue 28): its transaction moved money, and the rater has no counted rating of this skill
   * within the window. Checked under the skill's lock, so parallel ratings of one rater count once.
   */
  async function recordRating(input: RatingInput, outer?: Knex): Promise<{ counted: boolean; skill: SkillRow } | null> {
    if (!Number.isInteger(input.score) || input.score < ratingScoreMin || input.score > ratingScoreMax) {
      throw new AppError('validation_error', `a rating is a whole number from ${ratingScoreMin} to ${ratingScoreMax}`, {
        errors: [{ path: 'score', message: 'out of range' }],
      });
    }
    const work = async (trx: Knex) => {
      const skill = await lockSkill(trx, input.skill_id);
      if (!skill) throw new AppError('not_found', 'skill not found');
      const at = now();
      const counted = await countsTowardsQuality(trx, input, at);
      const comment = input.comment?.slice(0, limits.ratingCommentLengthMax) ?? null;
      const inserted = await trx('skill_ratings')
        .insert({
          id: randomUUID(),
          skill_id: input.skill_id,
          rater_user_id: input.rater_user_id,
          task_id: input.task_id,
          score: input.score,
          comment,
          counted,
          created_at: at,
        })
        .onConflict(['skill_id', 'rater_user_id', 'task_id'])
        .ignore()
        .returning('id');
      if (inserted.length === 0) return null;
      const columns: Record<string, unknown> = { ratings_total: skill.ratings_total + 1 };
      if (counted) {
        const count = skill.rating_count + 1;
        const sum = skill.rating_sum + input.score;
        Object.assign(columns, { rating_count: count, rating_sum: sum, quality_score: qualityScoreOf(count, sum) });
      }
      const [updated] = (await trx('skills')
        .where({ id: skill.id })
        .update(columns)
        .returning([...skillColumns])) as SkillRow[];
      return { counted, skill: updated! };
    };
    return outer ? work(outer) : withTransaction(db, ({ trx }) => work(trx));
  }

  /** A paid rating, and the rater's first counted one of the skill in the window (one index probe). */
  async function countsTowardsQuality(trx: Knex, input: RatingInput, at: Date): Promise<boolean> {
    if (input.paid_amount < BigInt(limits.skillRatingCountedAmountMinorUnitsMin)) return false;
    const since = new Date(at.getTime() - limits.skillRatingCountedWindowMs);
    const recent = await trx('skill_ratings')
      .where({ skill_id: input.skill_id, rater_user_id: input.rater_user_id, counted: true })
      .where('created_at', '>', since)
      .first('id');
    return recent === undefined;
  }

  return { create, insert, get, listMine, update, remove, ratings, recordRating };
}

/** One page of rows fetched with one extra (to know whether more follow), in the paged shape. */
export function pageOf<Row>(rows: Row[], query: { page: number; page_size: number }, total: number, keyOf: (row: Row) => string[]) {
  const items = rows.slice(0, query.page_size);
  const hasMore = rows.length > query.page_size;
  const last = items.at(-1);
  return {
    items,
    total,
    page: query.page,
    page_size: query.page_size,
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(keyOf(last)) : null,
  };
}

export type SkillEngine = ReturnType<typeof createSkillEngine>;
