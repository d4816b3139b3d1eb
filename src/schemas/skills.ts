import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { hallSorts, skillModes, skillPricingModels, skillSources, skillStatuses } from '../domain/skills.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';
import { pageArguments, pageQuery, pagedList } from './pagination.ts';
import { idempotencyKey } from './transactions.ts';

/** Skills (issue 17, docs/skills.md): one schema each for validation, types and the OpenAPI document. */
const name = z.string().trim().min(1).max(limits.skillNameLengthMax);
const description = z.string().trim().min(1).max(limits.skillDescriptionLengthMax).meta({ description: 'Deliverables and boundaries' });
const mode = z.enum(skillModes);
const city = z.string().trim().min(1).max(limits.skillCityLengthMax);
const category = z.enum(categoryCodes);
const tags = z.array(z.string().trim().min(1).max(limits.skillTagLengthMax)).max(limits.skillTagsMax);
const imageUrl = z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(limits.urlLengthMax);
const images = z
  .array(imageUrl)
  .max(limits.skillImagesMax)
  .meta({ description: `At most ${limits.skillImagesMax} https URLs` });
const pricingModel = z.enum(skillPricingModels);
const duration = z.number().int().min(1).max(limits.skillDurationHoursMax).meta({ description: 'Whole hours' });
const status = z.enum(skillStatuses);

/** The fields a skill's owner chooses; `user_id`, `owner_type` and `source` come from the server. */
export const skillFields = {
  name,
  description,
  mode: mode.optional().meta({ description: 'online (default) or offline; an offline skill needs city' }),
  city: city.optional(),
  category,
  tags: tags.optional(),
  images: images.optional(),
  ut_price: amountInput.optional().meta({ description: 'At least 0; left out: no price (to be agreed)' }),
  pricing_model: pricingModel.optional().meta({ description: 'fixed (default), per_hour, per_day, per_use or negotiable' }),
  min_duration: duration.optional(),
  max_duration: duration.optional(),
};

type Shape = { mode?: string | null; city?: string | null; min_duration?: number | null; max_duration?: number | null };

/** The rules across fields, shared by create, a candidate's confirmation and (on the merged row) update. */
export function skillShapeProblems(value: Shape): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  if (value.mode === 'offline' && !value.city) problems.push({ path: 'city', message: 'an offline skill needs city' });
  if (value.min_duration != null && value.max_duration != null && value.min_duration > value.max_duration) {
    problems.push({ path: 'max_duration', message: 'must not be below min_duration' });
  }
  return problems;
}

const shapeRules = (value: Shape, context: z.RefinementCtx) => {
  for (const problem of skillShapeProblems(value)) context.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
};

export const createSkillBody = z
  .strictObject({ ...skillFields, idempotency_key: idempotencyKey.optional() })
  .superRefine(shapeRules)
  .meta({ id: 'SkillCreate' });

/** The same fields without the idempotency key: what ai-create drafts and what a confirmation may edit. */
export const skillDraft = z.strictObject(skillFields).superRefine(shapeRules).meta({ id: 'SkillDraft' });

/**
 * PUT takes any subset of the fields plus `status` (active or inactive). city and the durations
 * can be cleared with null; the rules across fields are checked by the engine on what the update
 * leaves (an offline skill cannot lose its city).
 */
export const updateSkillFields = {
  name: name.optional(),
  description: description.optional(),
  mode: mode.optional(),
  city: city.nullable().optional(),
  category: category.optional(),
  tags: tags.optional(),
  images: images.optional(),
  ut_price: amountInput.nullable().optional(),
  pricing_model: pricingModel.optional(),
  min_duration: duration.nullable().optional(),
  max_duration: duration.nullable().optional(),
  status: status.optional().meta({ description: 'active (in the hall) or inactive (hidden, cannot apply to tasks)' }),
};

const someField = (value: Record<string, unknown>) => Object.keys(value).some((key) => key !== 'skill_id');

export const updateSkillBody = z
  .strictObject(updateSkillFields)
  .refine(someField, { message: 'name at least one field to change' })
  .meta({ id: 'SkillUpdate' });

export const skillResponse = z
  .object({
    id: uuid,
    user_id: uuid,
    owner_type: z.enum(['agent', 'human']),
    name: z.string(),
    description: z.string(),
    mode: z.enum(skillModes),
    city: z.string().nullable(),
    category: z.string().nullable(),
    tags: z.array(z.string()).nullable(),
    images: z.array(z.string()).nullable(),
    status: status,
    ut_price: amountOutput.nullable(),
    currency,
    pricing_model: z.string(),
    min_duration: z.number().int().nullable(),
    max_duration: z.number().int().nullable(),
    source: z.enum(skillSources),
    quality_score: z.number().meta({ description: 'Bayesian average of the ratings (docs/skills.md), 1 to 5' }),
    rating_count: z.number().int(),
    rating_average: z.number().nullable(),
    created_at: dateTime,
    updated_at: dateTime,
    deleted_at: dateTime.nullable().meta({ description: 'Set once the owner deleted it: still readable by the tasks and ratings that name it' }),
  })
  .meta({ id: 'Skill' });

export const skillList = pagedList(skillResponse).meta({ id: 'SkillList' });
export const hallResponse = pagedList(
  skillResponse.extend({ score: z.number().optional().meta({ description: "The matcher's score, 0 to 1 (relevance order only)" }) }),
)
  .extend({ sort: z.enum(hallSorts) })
  .meta({ id: 'SkillHall' });
export const deletedSkillResponse = z.object({ id: uuid, deleted: z.literal(true), deleted_at: dateTime }).meta({ id: 'DeletedSkill' });
export const skillIdParams = z.object({ skill_id: uuid });
/** The MCP tool update_skill: the skill's id beside the fields to change. */
export const updateSkillArguments = z
  .strictObject({ skill_id: uuid, ...updateSkillFields })
  .refine(someField, { message: 'name at least one field to change' });

export const listSkillsQuery = z.object({ status: status.optional(), ...pageQuery });

/** The hall's filters, shared by the REST query and the MCP tool's arguments. */
const hallFilters = {
  category: category.optional(),
  mode: mode.optional(),
  city: city.optional().meta({ description: 'Exact city, in any case' }),
  min_price_ut: amountInput.optional().meta({ description: 'Lowest ut_price, inclusive (unpriced skills are left out)' }),
  max_price_ut: amountInput.optional().meta({ description: 'Highest ut_price, inclusive (unpriced skills are left out)' }),
  q: z
    .string()
    .trim()
    .min(1)
    .max(limits.skillSearchQueryLengthMax)
    .optional()
    .meta({ description: 'Words to look for, in English or Chinese; ranked by the matcher' }),
  sort: z.enum(hallSorts).optional().meta({ description: 'relevance (default with q), newest (default without), price_asc, price_desc or quality' }),
};

const hallRules = (value: { min_price_ut?: bigint; max_price_ut?: bigint }, context: z.RefinementCtx) => {
  if (value.min_price_ut !== undefined && value.max_price_ut !== undefined && value.min_price_ut > value.max_price_ut) {
    context.addIssue({ code: 'custom', path: ['max_price_ut'], message: 'must not be below min_price_ut' });
  }
};

export const hallQuery = z.object({ ...hallFilters, ...pageQuery }).superRefine(hallRules);
export const hallArguments = z.strictObject({ ...hallFilters, ...pageArguments }).superRefine(hallRules);
export const listSkillsArguments = z.strictObject({ status: status.optional(), ...pageArguments });

export const extractSkillsBody = z
  .strictObject({
    content: z
      .string()
      .trim()
      .min(1)
      .max(limits.skillExtractTextLengthMax)
      .meta({
        description: `A CV, a portfolio or a service description, in English or Chinese, up to ${limits.skillExtractTextLengthMax} characters`,
      }),
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'SkillExtract' });

export const skillCandidateResponse = z
  .object({
    id: uuid,
    name: z.string(),
    description: z.string(),
    category: z.string(),
    tags: z.array(z.string()),
    evidence: z.array(z.string()).meta({ description: 'The sentences of the text the candidate was drawn from' }),
    confidence: z.number().meta({ description: '0 to 1' }),
    extracted_by: z.enum(['builtin', 'ai']),
    status: z.enum(['pending', 'confirmed']),
    skill_id: uuid.nullable(),
    created_at: dateTime,
    confirmed_at: dateTime.nullable(),
  })
  .meta({ id: 'SkillCandidate' });

export const extractSkillsResponse = z
  .object({ language: z.enum(['en', 'zh']), extracted_by: z.enum(['builtin', 'ai']), candidates: z.array(skillCandidateResponse) })
  .meta({ id: 'SkillExtraction' });

export const candidateList = pagedList(skillCandidateResponse).meta({ id: 'SkillCandidateList' });
export const listCandidatesQuery = z.object({ status: z.enum(['pending', 'confirmed']).optional(), ...pageQuery });
export const candidateIdParams = z.object({ candidate_id: uuid });

/** A confirmation may change any field of the candidate before it becomes a skill. */
export const confirmCandidateBody = z.strictObject(skillFields).partial().meta({ id: 'SkillCandidateConfirm' });

export const aiCreateBody = z
  .strictObject({
    prompt: z.string().trim().min(1).max(limits.skillPromptLengthMax).meta({ description: 'What the skill is, in a sentence or two (English or Chinese)' }),
    category: category.optional(),
    mode: mode.optional(),
    city: city.optional(),
  })
  .superRefine(shapeRules)
  .meta({ id: 'SkillAiCreate' });

export const ratingResponse = z
  .object({
    id: uuid,
    skill_id: uuid,
    rater_user_id: uuid,
    task_id: uuid.nullable(),
    score: z.number().int(),
    comment: z.string().nullable(),
    counted: z.boolean().meta({
      description:
        "Whether it counts towards the skill's quality score: only a rating of a transaction that moved money, and one per rater and skill in 30 days (docs/skills.md)",
    }),
    created_at: dateTime,
  })
  .meta({ id: 'SkillRating' });

export const ratingList = pagedList(ratingResponse)
  .extend({
    skill_id: uuid,
    average: z.number().nullable().meta({ description: 'Plain average of the counted scores, null before the first' }),
    count: z.number().int().meta({ description: 'Ratings that count towards the quality score; `total` is every rating listed' }),
    quality_score: z.number(),
  })
  .meta({ id: 'SkillRatingList' });
export const ratingsQuery = z.object({ ...pageQuery });

export type CreateSkillInput = Omit<z.output<typeof createSkillBody>, 'idempotency_key'>;
export type SkillDraft = z.output<typeof skillDraft>;
export type UpdateSkillInput = z.output<typeof updateSkillBody>;
export type HallInput = z.output<typeof hallQuery>;
export type SkillView = z.infer<typeof skillResponse>;
export type SkillCandidateView = z.infer<typeof skillCandidateResponse>;
export type RatingView = z.infer<typeof ratingResponse>;
