import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { actionTowards, nextSkillStatus, qualityScoreOf, ratingScoreMax, ratingScoreMin, type SkillSource } from '../domain/skills.ts';
import { withTransaction } from '../db/transaction.ts';
import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';
import type { CreateSkillInput, SkillDraft, SkillView, UpdateSkillInput } from '../schemas/skills.ts';
import { findSkill, ownSkillsQuery, type SkillRow, skillColumns } from '../store/skills.ts';
import { manageSkill, seeSkill } from './access/skills.ts';
import { authorize } from './access/rules.ts';
import { decodeCursor, encodeCursor, isoTimestamp, uuidText } from './cursor.ts';
import type { EngineDependencies, Principal } from './dependencies.ts';
import { newestFirstPage } from './paging.ts';
import type { Idempotency, IdempotencyRequest, Outcome } from './idempotency.ts';
import { changedSkillColumns, newSkillRow, type RatingRow, ratingView, skillView } from './skill-rows.ts';

/** A rating as the tasks issue writes it: once per rater and task. */
export interface RatingInput {
  skill_id: string;
  rater_user_id: string;
  task_id: string | null;
  score: number;
  comment?: string | null;
}

/** Skills (docs/skills.md): create, read, list one's own, change, delete, and the ratings. */
export function createSkillEngine({ db, now }: EngineDependencies, idempotency: Idempotency) {
  /** Creating is keyed like every state-changing POST: a retried request creates one skill. */
  function create(principal: Principal, input: CreateSkillInput, request: IdempotencyRequest | null): Promise<Outcome<SkillView>> {
    return idempotency.run(principal, request, 201, async ({ trx }) => skillView(await insert(trx, principal, input, 'manual')));
  }

  async function insert(trx: Knex, principal: Principal, draft: SkillDraft, source: SkillSource, candidateId: string | null = null): Promise<SkillRow> {
    const [row] = (await trx('skills').insert(newSkillRow(principal, draft, source, now(), candidateId)).returning([...skillColumns])) as SkillRow[];
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
      const [updated] = (await trx('skills').where({ id }).update({ ...columns, updated_at: now() }).returning([...skillColumns])) as SkillRow[];
      return skillView(updated!);
    });
  }

  /** Soft delete by the owner: the row stays for the tasks and ratings that name it; a second delete is 4040. */
  function remove(principal: Principal, id: string) {
    return withTransaction(db, async ({ trx }) => {
      authorize(manageSkill, principal, await lockSkill(trx, id), 'skill');
      const at = now();
      await trx('skills').where({ id }).update({ deleted_at: at, updated_at: at });
      return { id, deleted: true as const, deleted_at: at.toISOString() };
    });
  }

  const lockSkill = (trx: Knex, id: string) => trx<SkillRow>('skills').where({ id }).forNoKeyUpdate().first(...skillColumns) as Promise<SkillRow | undefined>;

  /** The ratings of a skill readable by the caller, newest first, with the average, count and quality. */
  async function ratings(principal: Principal, id: string, query: { page: number; page_size: number; cursor?: string }) {
    const skill = authorize(seeSkill, principal, await findSkill(db, id), 'skill');
    const page = db<RatingRow>('skill_ratings').where({ skill_id: id }).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(query.page_size + 1);
    if (query.cursor) {
      const [createdAt, ratingId] = decodeCursor(query.cursor, [isoTimestamp, uuidText]);
      page.whereRaw('(created_at, id) < (?::timestamptz, ?::uuid)', [createdAt!, ratingId!]);
    } else {
      page.offset((query.page - 1) * query.page_size);
    }
    const listed = pageOf((await page) as RatingRow[], query, skill.rating_count, (row) => [new Date(row.created_at).toISOString(), row.id]);
    const view = skillView(skill);
    return { ...listed, items: listed.items.map(ratingView), skill_id: id, average: view.rating_average, count: skill.rating_count, quality_score: view.quality_score };
  }

  /**
   * Records a rating (the tasks issue calls this when a task is rated) and the skill's new counts
   * and quality score in one transaction, on the skill row locked first, so concurrent ratings
   * add up. The same rater rating the same task again changes nothing and answers false.
   */
  async function recordRating(input: RatingInput, outer?: Knex): Promise<boolean> {
    if (!Number.isInteger(input.score) || input.score < ratingScoreMin || input.score > ratingScoreMax) {
      throw new AppError('validation_error', `a rating is a whole number from ${ratingScoreMin} to ${ratingScoreMax}`, { errors: [{ path: 'score', message: 'out of range' }] });
    }
    const work = async (trx: Knex) => {
      const skill = await lockSkill(trx, input.skill_id);
      if (!skill) throw new AppError('not_found', 'skill not found');
      const comment = input.comment?.slice(0, limits.ratingCommentLengthMax) ?? null;
      const inserted = await trx('skill_ratings')
        .insert({ id: randomUUID(), skill_id: input.skill_id, rater_user_id: input.rater_user_id, task_id: input.task_id, score: input.score, comment, created_at: now() })
        .onConflict(['skill_id', 'rater_user_id', 'task_id'])
        .ignore()
        .returning('id');
      if (inserted.length === 0) return false;
      const count = skill.rating_count + 1;
      const sum = skill.rating_sum + input.score;
      await trx('skills').where({ id: skill.id }).update({ rating_count: count, rating_sum: sum, quality_score: qualityScoreOf(count, sum) });
      return true;
    };
    return outer ? work(outer) : withTransaction(db, ({ trx }) => work(trx));
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
