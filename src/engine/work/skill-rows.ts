import { randomUUID } from 'node:crypto';
import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import { averageRatingOf, qualityScoreOf, type SkillSource } from '../../domain/skills.ts';
import { wordColumnsOf } from '../../domain/term-vectors.ts';
import { AppError } from '../../errors.ts';
import { type RatingView, type SkillDraft, type SkillView, type UpdateSkillInput, skillShapeProblems } from '../../schemas/skills.ts';
import type { SkillRow } from '../../store/skills.ts';
import type { Principal } from '../common/index.ts';

/** Rows of skills: what create inserts, what an update changes, and how a row is shown. */

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
const amountColumn = (amount: bigint | null | undefined) => (amount === undefined ? undefined : amount === null ? null : String(amount));
/** The matcher reads a skill's name as its title: the same stored vector and digest as capabilities. */
const wordsOfSkill = (name: string, description: string, tags: string[]) => wordColumnsOf({ title: name, description, tags });

/** A new skill of the caller's, in the caller's space: owner, space and source are the server's. */
export function newSkillRow(principal: Principal, draft: SkillDraft, source: SkillSource, at: Date, candidateId: string | null = null) {
  const tags = draft.tags ?? [];
  return {
    id: randomUUID(),
    owner_user_id: principal.user_id,
    owner_type: principal.caller_type,
    name: draft.name,
    description: draft.description,
    mode: draft.mode ?? 'online',
    city: draft.city ?? null,
    category: draft.category,
    tags: JSON.stringify(tags),
    images: JSON.stringify(draft.images ?? []),
    price: amountColumn(draft.ut_price) ?? null,
    pricing_model: draft.pricing_model ?? 'fixed',
    min_duration: draft.min_duration ?? null,
    max_duration: draft.max_duration ?? null,
    status: 'active',
    source,
    candidate_id: candidateId,
    ...wordsOfSkill(draft.name, draft.description, tags),
    rating_count: 0,
    rating_sum: 0,
    quality_score: qualityScoreOf(0, 0),
    ratings_total: 0,
    created_at: at,
    updated_at: at,
  };
}

/**
 * The columns a partial update sets (only the fields named; null clears city, price or a
 * duration), after checking the rules across fields on what the update leaves: an offline skill
 * keeps a city, and the durations stay in order.
 */
export function changedSkillColumns(row: SkillRow, patch: Omit<UpdateSkillInput, 'status'>): Record<string, unknown> {
  const merged = { ...row, ...patch };
  const problems = skillShapeProblems(merged);
  if (problems.length > 0) {
    throw new AppError('validation_error', 'the skill would not be valid after this update', {
      errors: problems.map((problem) => ({ path: `body.${problem.path}`, message: problem.message })),
    });
  }
  const columns: Record<string, unknown> = {
    name: patch.name,
    description: patch.description,
    mode: patch.mode,
    city: patch.city,
    category: patch.category,
    tags: patch.tags === undefined ? undefined : JSON.stringify(patch.tags),
    images: patch.images === undefined ? undefined : JSON.stringify(patch.images),
    price: amountColumn(patch.ut_price),
    pricing_model: patch.pricing_model,
    min_duration: patch.min_duration,
    max_duration: patch.max_duration,
  };
  for (const key of Object.keys(columns)) if (columns[key] === undefined) delete columns[key];
  // New words, new vector: computed once here, read by every hall query after.
  if (patch.name !== undefined || patch.description !== undefined || patch.tags !== undefined) {
    Object.assign(columns, wordsOfSkill(merged.name, merged.description, merged.tags));
  }
  return columns;
}

export function skillView(row: SkillRow): SkillView {
  return {
    id: row.id,
    user_id: row.owner_user_id,
    owner_type: row.owner_type,
    name: row.name,
    description: row.description,
    mode: row.mode,
    city: row.city,
    category: row.category,
    tags: row.tags,
    images: row.images,
    status: row.status,
    ut_price: row.price === null ? null : formatAmount(row.price),
    currency: currencyOfSpace(row.owner_type),
    pricing_model: row.pricing_model,
    min_duration: row.min_duration,
    max_duration: row.max_duration,
    source: row.source,
    quality_score: Number(row.quality_score),
    rating_count: row.rating_count,
    rating_average: averageRatingOf(row.rating_count, row.rating_sum),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    deleted_at: iso(row.deleted_at),
  };
}

export interface RatingRow {
  id: string;
  skill_id: string;
  rater_user_id: string;
  task_id: string | null;
  score: number;
  comment: string | null;
  /** Whether it counts towards the skill's quality score (docs/skills.md "Ratings and quality"). */
  counted: boolean;
  created_at: Date;
}

export const ratingView = (row: RatingRow): RatingView => ({
  id: row.id,
  skill_id: row.skill_id,
  rater_user_id: row.rater_user_id,
  task_id: row.task_id,
  score: row.score,
  comment: row.comment,
  counted: row.counted,
  created_at: iso(row.created_at)!,
});
