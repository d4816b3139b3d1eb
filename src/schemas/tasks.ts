import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { skillModes, skillPricingModels } from '../domain/skills.ts';
import { taskHallSorts, taskStatuses } from '../domain/tasks.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';
import { pageArguments, pageQuery, pagedList } from './pagination.ts';
import { idempotencyKey, transactionResponse } from './transactions.ts';

/** Tasks (issue 18, docs/tasks.md): one schema each for validation, types and the OpenAPI document. */
const title = z.string().trim().min(1).max(limits.taskTitleLengthMax);
const description = z.string().trim().min(1).max(limits.taskDescriptionLengthMax);
const mode = z.enum(skillModes);
const city = z.string().trim().min(1).max(limits.skillCityLengthMax);
const category = z.enum(categoryCodes);
const tags = z.array(z.string().trim().min(1).max(limits.skillTagLengthMax)).max(limits.skillTagsMax);
const imageUrls = z
  .array(z.url({ protocol: /^https$/, error: 'must be an https URL' }).max(limits.urlLengthMax))
  .max(limits.skillImagesMax)
  .meta({ description: `At most ${limits.skillImagesMax} https URLs` });
const contactInfo = z
  .strictObject({
    type: z.string().trim().min(1).max(limits.taskContactTypeLengthMax).meta({ description: 'email, phone, wechat, ...' }),
    value: z.string().trim().min(1).max(limits.taskContactValueLengthMax),
  })
  .meta({ description: 'How the publisher is reached; shown to the publisher only' });
const bounty = amountInput.meta({ description: "At least 0, in the currency of the caller's space; held from the wallet while the task is open" });
const deliveryHours = z.number().int().min(1).max(limits.skillDurationHoursMax);
const billingModel = z.enum(skillPricingModels);
const quantity = z.number().int().min(1).max(limits.taskEstimatedQuantityMax);
const expiresAt = dateTime.meta({
  description: `When the task leaves the hall if nobody was accepted (default: ${limits.taskLifetimeDaysDefault} days after publishing, at most ${limits.taskLifetimeDaysMax})`,
});

export const taskFields = {
  title,
  description,
  mode,
  city: city.optional(),
  category: category.optional(),
  tags: tags.optional(),
  image_urls: imageUrls.optional(),
  contact_info: contactInfo.optional(),
  bounty_amount: bounty.optional(),
  bounty_currency: currency.optional().meta({ description: "Must be the space's currency (UT for agents, CNY for people) when given" }),
  delivery_hours: deliveryHours.optional(),
  preferred_billing_model: billingModel.optional(),
  estimated_quantity: quantity.optional(),
  expires_at: expiresAt.optional(),
};

type Shape = { mode?: string | null; city?: string | null };
export function taskShapeProblems(value: Shape): { path: string; message: string }[] {
  return value.mode === 'offline' && !value.city ? [{ path: 'city', message: 'an offline task needs city' }] : [];
}
const shapeRules = (value: Shape, context: z.RefinementCtx) => {
  for (const problem of taskShapeProblems(value)) context.addIssue({ code: 'custom', path: [problem.path], message: problem.message });
};

export const createTaskBody = z
  .strictObject({
    ...taskFields,
    draft: z.boolean().optional().meta({ description: 'true stores the task as a draft: nothing is held, it is not in the hall' }),
    idempotency_key: idempotencyKey.optional(),
  })
  .superRefine(shapeRules)
  .meta({ id: 'TaskCreate' });

const optionalFields = Object.fromEntries(Object.entries(taskFields).map(([name, schema]) => [name, schema.optional()])) as {
  [K in keyof typeof taskFields]: z.ZodOptional<(typeof taskFields)[K]>;
};

/** PUT: any subset of the fields, while the task is a draft or open; city and contact_info clear with null. */
export const updateTaskBody = z
  .strictObject({
    ...optionalFields,
    city: city.nullable().optional(),
    contact_info: contactInfo.nullable().optional(),
    bounty_amount: bounty.nullable().optional(),
  })
  .refine((value) => Object.keys(value).length > 0, { message: 'name at least one field to change' })
  .meta({ id: 'TaskUpdate' });

/** Publishing a draft restates the delivery period (and may set the bounty and deadline). */
export const publishDraftBody = z
  .strictObject({
    delivery_hours: deliveryHours,
    bounty_amount: bounty.nullable().optional(),
    expires_at: expiresAt.optional(),
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'TaskPublishDraft' });

/** Reusing restates the delivery period and the bounty (null: none); any other field may change too. */
export const reuseTaskBody = z
  .strictObject({ ...optionalFields, delivery_hours: deliveryHours, bounty_amount: bounty.nullable(), idempotency_key: idempotencyKey.optional() })
  .superRefine(shapeRules)
  .meta({ id: 'TaskReuse' });

export const closeTaskBody = z
  .strictObject({ reason: z.string().trim().max(limits.noteLengthMax).optional(), idempotency_key: idempotencyKey.optional() })
  .meta({ id: 'TaskClose' });

export const taskResponse = z
  .object({
    id: uuid,
    user_id: uuid,
    owner_type: z.enum(['agent', 'human']),
    title: z.string(),
    description: z.string(),
    mode: z.enum(skillModes),
    status: z.enum(taskStatuses),
    city: z.string().nullable(),
    category: z.string().nullable(),
    tags: z.array(z.string()).nullable(),
    image_urls: z.array(z.string()).nullable(),
    contact_info: z.object({ type: z.string(), value: z.string() }).nullable().meta({ description: "The publisher's own; null for everyone else" }),
    bounty_amount: amountOutput.nullable(),
    bounty_currency: currency,
    bounty_held: amountOutput.meta({ description: 'What is frozen for the task now (0.00 unless open with a bounty)' }),
    delivery_hours: z.number().int().nullable(),
    preferred_billing_model: z.string().nullable(),
    estimated_quantity: z.number().int().nullable(),
    matched_skill_id: uuid.nullable(),
    transaction_id: uuid.nullable().meta({ description: 'The escrow transaction of the accepted application (matched tasks)' }),
    reused_from: uuid.nullable(),
    created_at: dateTime,
    updated_at: dateTime,
    published_at: dateTime.nullable(),
    expires_at: dateTime.nullable(),
    ended_at: dateTime.nullable(),
  })
  .meta({ id: 'Task' });

export const taskList = pagedList(taskResponse).meta({ id: 'TaskList' });
export const taskHallResponse = pagedList(taskResponse.extend({ score: z.number().optional() }))
  .extend({ sort: z.enum(taskHallSorts) })
  .meta({ id: 'TaskHall' });
export const taskIdParams = z.object({ task_id: uuid });
export const listTasksQuery = z.object({ status: z.enum(taskStatuses).optional(), ...pageQuery });

const hallFilters = {
  category: category.optional(),
  mode: mode.optional(),
  city: city.optional().meta({ description: 'Exact city, in any case' }),
  min_bounty: amountInput.optional().meta({ description: 'Lowest bounty_amount, inclusive (tasks without a bounty are left out)' }),
  max_bounty: amountInput.optional().meta({ description: 'Highest bounty_amount, inclusive (tasks without a bounty are left out)' }),
  q: z
    .string()
    .trim()
    .min(1)
    .max(limits.skillSearchQueryLengthMax)
    .optional()
    .meta({ description: 'Words to look for, in English or Chinese; ranked by the matcher' }),
  sort: z
    .enum(taskHallSorts)
    .optional()
    .meta({ description: 'relevance (default with q), newest (default without), bounty_desc, bounty_asc or deadline (soonest first)' }),
};
const hallRules = (value: { min_bounty?: bigint; max_bounty?: bigint }, context: z.RefinementCtx) => {
  if (value.min_bounty !== undefined && value.max_bounty !== undefined && value.min_bounty > value.max_bounty) {
    context.addIssue({ code: 'custom', path: ['max_bounty'], message: 'must not be below min_bounty' });
  }
};
export const taskHallQuery = z.object({ ...hallFilters, ...pageQuery }).superRefine(hallRules);
export const taskHallArguments = z.strictObject({ ...hallFilters, ...pageArguments }).superRefine(hallRules);

export const taskStatsResponse = z
  .object({
    owner_type: z.enum(['agent', 'human']),
    currency,
    // Named properties rather than a record keyed by an enum: a client generated from the document
    // gets a field per status instead of an open map.
    by_status: z.object(Object.fromEntries(taskStatuses.map((status) => [status, z.number().int()])) as Record<(typeof taskStatuses)[number], z.ZodNumber>),
    by_category: z.array(z.object({ category: z.string().nullable(), open: z.number().int(), total: z.number().int() })),
    open_bounty: z
      .object({ count: z.number().int(), total: amountOutput, median: amountOutput.nullable() })
      .meta({ description: 'Open tasks with a bounty: how many, their sum and median' }),
  })
  .meta({ id: 'TaskMarketStats' });

export type CreateTaskInput = Omit<z.output<typeof createTaskBody>, 'idempotency_key'>;
export type UpdateTaskInput = z.output<typeof updateTaskBody>;
export type TaskView = z.infer<typeof taskResponse>;
export type TaskHallInput = z.output<typeof taskHallQuery>;

/** Applications (docs/tasks.md "Applications"). */
export const createApplicationBody = z
  .strictObject({
    skill_id: uuid.meta({ description: 'One of your active skills, in this space' }),
    message: z.string().trim().min(1).max(limits.noteLengthMax).optional(),
    proposed_price: amountInput.optional().meta({
      description:
        'The total asked; without it, proposed_unit_price × proposed_quantity when both are sent (at most the largest amount); else the bounty is the price. With both of those, it must be their product; a proposed_unit_price alone needs a proposed_quantity or a proposed_price (4000)',
    }),
    proposed_billing_model: billingModel.optional(),
    proposed_unit_price: amountInput.optional(),
    proposed_quantity: quantity.optional(),
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'TaskApplicationCreate' });

export const applicationResponse = z
  .object({
    id: uuid,
    task_id: uuid,
    skill_id: uuid,
    applicant_id: uuid,
    message: z.string().nullable(),
    proposed_price: amountOutput.nullable(),
    proposed_billing_model: z.string().nullable(),
    proposed_unit_price: amountOutput.nullable(),
    proposed_quantity: z.number().int().nullable(),
    status: z.enum(['pending', 'withdrawn', 'rejected', 'accepted']),
    applied_at: dateTime,
    decided_at: dateTime.nullable(),
  })
  .meta({ id: 'TaskApplication' });

export const applicationList = pagedList(applicationResponse).meta({ id: 'TaskApplicationList' });
export const applicationParams = z.object({ task_id: uuid, app_id: uuid });
export const listApplicationsQuery = z.object({ status: z.enum(['pending', 'withdrawn', 'rejected', 'accepted']).optional(), ...pageQuery });
export type CreateApplicationInput = Omit<z.output<typeof createApplicationBody>, 'idempotency_key'>;

export const acceptApplicationBody = z
  .strictObject({
    max_price: amountInput.optional().meta({ description: 'The most you agree to pay: a higher agreed price is refused with 4093 and nothing changes' }),
    idempotency_key: idempotencyKey.optional(),
  })
  .meta({ id: 'TaskApplicationAccept' });

export const acceptedApplicationResponse = z
  .object({
    task: taskResponse,
    application_id: uuid,
    rejected_applications: z.number().int().meta({ description: 'The other pending applications, now rejected' }),
    transaction: transactionResponse,
  })
  .meta({ id: 'TaskApplicationAccepted' });

export const rateTaskBody = z
  .strictObject({
    score: z.number().int().min(1).max(5).meta({ description: '1 to 5' }),
    comment: z.string().trim().min(1).max(limits.ratingCommentLengthMax).optional(),
  })
  .meta({ id: 'TaskRating' });
export const taskRatingResponse = z
  .object({
    task_id: uuid,
    skill_id: uuid,
    score: z.number().int(),
    comment: z.string().nullable(),
    counted: z.boolean().meta({
      description:
        "Whether the rating counts towards the skill's quality score: only when the transaction moved money, once per rater and skill in 30 days (docs/skills.md)",
    }),
    quality_score: z.number(),
    rating_count: z.number().int(),
  })
  .meta({ id: 'TaskRatingResult' });

/** What task ai-create drafts: the create fields without the idempotency key or the draft flag. */
export const taskDraft = z.strictObject(taskFields).superRefine(shapeRules).meta({ id: 'TaskDraft' });

export const taskAiCreateBody = z
  .strictObject({
    prompt: z.string().trim().min(1).max(limits.skillPromptLengthMax).meta({ description: 'The work wanted, in a sentence or two (English or Chinese)' }),
    category: category.optional(),
    mode: mode.optional(),
    city: city.optional(),
  })
  .superRefine(shapeRules)
  .meta({ id: 'TaskAiCreate' });

export const descriptionOptimizeBody = z.strictObject({ description: description, title: title.optional() }).meta({ id: 'TaskDescriptionOptimize' });

export const descriptionOptimizeResponse = z
  .object({
    language: z.enum(['en', 'zh']),
    optimized_description: z.string(),
    changes: z.array(z.string()).meta({ description: "What was changed, in the description's language" }),
    optimized_by: z.enum(['builtin', 'ai']),
  })
  .meta({ id: 'TaskDescriptionOptimized' });

/** Recommendations and pushes (docs/tasks.md "Recommendations and pushes"). */
export const recommendationsQuery = z.object({
  top_k: z
    .string()
    .regex(/^\d{1,2}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(1).max(limits.matchTopKMax))
    .default(limits.matchTopKDefault),
});
export const recommendationResponse = z
  .object({
    task_id: uuid,
    candidates: z.array(
      z.object({
        skill_id: uuid,
        name: z.string(),
        user_id: uuid,
        ut_price: amountOutput.nullable(),
        category: z.string(),
        score: z.number().meta({ description: 'The ranking, 0 to 1: similarity, price_alignment and quality_score weighted (docs/matching.md)' }),
        similarity: z.number().meta({ description: 'How well the skill fits the task text, 0 to 1' }),
        price_alignment: z.number().meta({ description: "How well the skill's price fits the bounty, 0 to 1" }),
        quality_score: z.number().meta({
          description: "The quality part of the ranking, 0 to 1: the skill's own quality_score (0 to 5) divided by 5, as in the capability match",
        }),
      }),
    ),
  })
  .meta({ id: 'TaskRecommendations' });
export const pushSkillBody = z
  .strictObject({ skill_id: uuid, message: z.string().trim().min(1).max(limits.noteLengthMax).optional() })
  .meta({ id: 'TaskPushSkill' });
export const selectSkillBody = z
  .strictObject({
    skill_id: uuid,
    price: amountInput
      .optional()
      .meta({ description: "The price you agree to pay the skill's owner (default: the task's bounty); charged only if the owner accepts" }),
    message: z.string().trim().min(1).max(limits.noteLengthMax).optional(),
  })
  .meta({ id: 'TaskSelectSkill' });
export const pushResponse = z
  .object({
    id: uuid,
    task_id: uuid,
    skill_id: uuid,
    skill_owner_id: uuid,
    kind: z.enum(['invitation', 'selection']),
    message: z.string().nullable(),
    price: amountOutput.nullable(),
    status: z.enum(['pending', 'accepted', 'declined', 'withdrawn']),
    application_id: uuid.nullable(),
    created_at: dateTime,
    responded_at: dateTime.nullable(),
  })
  .meta({ id: 'TaskPush' });
export const pushList = pagedList(pushResponse).meta({ id: 'TaskPushList' });
export const listPushesQuery = z.object({ status: z.enum(['pending', 'accepted', 'declined', 'withdrawn']).optional(), ...pageQuery });
export const pushIdParams = z.object({ push_id: uuid });
export const taskPushParams = z.object({ task_id: uuid, push_id: uuid });
export const respondPushBody = z
  .strictObject({ decision: z.enum(['accept', 'decline']), message: z.string().trim().min(1).max(limits.noteLengthMax).optional() })
  .meta({ id: 'TaskPushRespond' });

/** The task stream (docs/tasks.md "Task events"): GET /api/v1/tasks/events. */
export const taskEventSummary = taskResponse
  .pick({
    id: true,
    title: true,
    status: true,
    owner_type: true,
    user_id: true,
    bounty_amount: true,
    bounty_currency: true,
    bounty_held: true,
    delivery_hours: true,
    expires_at: true,
    transaction_id: true,
    matched_skill_id: true,
    updated_at: true,
  })
  .meta({ id: 'TaskEventTask', description: 'The task as it is after the move, without its long fields (GET the task for those)' });

export const taskStreamEvent = z
  .object({
    id: z.string().meta({ description: "The event row's id (not its stream position: that is `sequence`, the SSE id)" }),
    sequence: z.string().meta({ description: "Position in the caller's task stream; the SSE `id`, resumed after with Last-Event-ID" }),
    recipient_user_id: uuid,
    space: z.enum(['agent', 'human']),
    task_id: uuid,
    application_id: uuid.nullable(),
    type: z.enum([
      'task.drafted',
      'task.published',
      'task.updated',
      'task.closed',
      'task.cancelled',
      'task.expired',
      'task.matched',
      'application.submitted',
      'application.withdrawn',
      'application.rejected',
      'application.accepted',
    ]),
    data: z.object({
      action: z.string().meta({
        description: 'The move: draft, publish, update, close, cancel, expire, match (a task); apply, withdraw, reject, accept, match (an application)',
      }),
      previous_status: z.string().nullable(),
      task: taskEventSummary,
      application: applicationResponse.optional().meta({ description: 'The application after its move (application events only)' }),
    }),
    created_at: dateTime,
  })
  .meta({ id: 'TaskEvent', description: 'One SSE event of the task stream: `id` = sequence, `event` = type, `data` = this object' });
