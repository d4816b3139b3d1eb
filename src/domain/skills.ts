import { AppError } from '../errors.ts';

/**
 * Skill rules without I/O (docs/skills.md): the status table, the hall's orders and the quality
 * score. A skill is `active` (in the hall, may apply to tasks) or `inactive` (kept, hidden); the
 * owner moves it with PUT `status`. Deleting is not a status: a deleted skill keeps its row and
 * its last status so that the tasks and ratings that name it can still read it.
 */
export const skillStatuses = ['active', 'inactive'] as const;
export type SkillStatus = (typeof skillStatuses)[number];
export const skillActions = ['activate', 'deactivate'] as const;
export type SkillAction = (typeof skillActions)[number];

export const skillModes = ['online', 'offline'] as const;
export const skillPricingModels = ['fixed', 'per_hour', 'per_day', 'per_use', 'negotiable'] as const;
/** Where a skill came from; set by the server, never by the caller. */
export const skillSources = ['manual', 'extracted', 'ai_created'] as const;
export type SkillSource = (typeof skillSources)[number];

export interface SkillTransition {
  from: SkillStatus;
  action: SkillAction;
  to: SkillStatus;
}

/** The whole table (docs/skills.md "Skill status"): anything else is 4090. */
export const skillTransitionTable: readonly SkillTransition[] = [
  { from: 'active', action: 'deactivate', to: 'inactive' },
  { from: 'inactive', action: 'activate', to: 'active' },
];

export function nextSkillStatus(from: SkillStatus, action: SkillAction): SkillStatus {
  const transition = skillTransitionTable.find((row) => row.from === from && row.action === action);
  if (!transition) {
    throw new AppError('invalid_state_transition', `cannot ${action} a skill that is ${from}`, { status: from, action });
  }
  return transition.to;
}

/**
 * The action a PUT `status` asks for, or null when it names the status the skill already has: a
 * PUT states what the skill should look like, so repeating it changes nothing and is no error.
 */
export function actionTowards(from: SkillStatus, wanted: SkillStatus): SkillAction | null {
  if (wanted === from) return null;
  return wanted === 'active' ? 'activate' : 'deactivate';
}

/**
 * Quality: the Bayesian average of the 1-5 ratings, pulled towards a prior of
 * `qualityPriorMean` with the weight of `qualityPriorWeight` ratings. A new skill scores the
 * prior; one 5-star rating moves it a little, fifty move it almost all the way. This keeps a skill
 * with one lucky rating from outranking one with a long good record in the hall's quality order.
 */
export const qualityPriorMean = 3;
export const qualityPriorWeight = 5;
export const ratingScoreMin = 1;
export const ratingScoreMax = 5;

export function qualityScoreOf(ratingCount: number, ratingSum: number): number {
  const score = (qualityPriorMean * qualityPriorWeight + ratingSum) / (qualityPriorWeight + ratingCount);
  return Math.round(score * 1000) / 1000;
}

/** The plain average shown beside the count (null before the first rating), two decimals. */
export function averageRatingOf(ratingCount: number, ratingSum: number): number | null {
  return ratingCount === 0 ? null : Math.round((ratingSum / ratingCount) * 100) / 100;
}

/**
 * The hall's orders. `relevance` needs a text query and is its default; without one, `newest`.
 * Prices are ascending or descending with unpriced (negotiable) skills last either way.
 */
export const hallSorts = ['relevance', 'newest', 'price_asc', 'price_desc', 'quality'] as const;
export type HallSort = (typeof hallSorts)[number];

export function hallSortOf(requested: HallSort | undefined, hasQuery: boolean): HallSort {
  if (requested === 'relevance' && !hasQuery) {
    throw new AppError('validation_error', 'sort=relevance needs a text query', { errors: [{ path: 'query.sort', message: 'relevance needs q' }] });
  }
  return requested ?? (hasQuery ? 'relevance' : 'newest');
}
