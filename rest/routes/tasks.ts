import type { Response } from 'express';
import { z } from 'zod';
import type { Engine } from '../../src/engine/index.ts';
import type { Outcome } from '../../src/engine/money/index.ts';
import { shortfallError, type TaskOutcome } from '../../src/engine/work/index.ts';
import * as schemas from '../../src/schemas/tasks.ts';
import { renderOutcome } from '../idempotency.ts';
import { draftEvents, serveDraft } from '../draft-stream.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { route } from '../route.ts';
import { lastEventQuery, serveEventStream, tooOldEvent } from './streams.ts';

const base = '/api/v1/tasks';

/**
 * A publish answers the task, or 4020 with the draft it left and the numbers when the bounty is
 * more than the available balance (the same answer again for a retried key).
 */
function publishAnswer(response: Response, outcome: Outcome<TaskOutcome>) {
  const data = renderOutcome(response, outcome);
  if (data.shortfall) throw shortfallError(data);
  return data.task;
}

const bothSpellings = <T>(make: (path: string) => T) => [make(`${base}/`), make(base)];

/** The task endpoints built so far (issue 18, docs/tasks.md): publishing, drafts, changes, the hall and its statistics. */
export const taskRoutes = (engine: Engine) => [
  ...bothSpellings((path) =>
    route({
      method: 'post',
      path,
      idempotent: true,
      tag: 'tasks',
      auth: 'user',
      successStatus: 201,
      errors: [4020, 4021, 4091, 4220],
      summary:
        "Publish a task in the caller's space, holding its bounty from the wallet (4020 and kept as a draft when the balance is short), or store a draft",
      body: schemas.createTaskBody,
      response: schemas.taskResponse,
      handler: async ({ principal, body, idempotency, response }) => {
        const { idempotency_key: _key, ...input } = body;
        return publishAnswer(response, await engine.tasks.create(principal!, input, idempotency));
      },
    }),
  ),
  ...bothSpellings((path) =>
    route({
      method: 'get',
      path,
      tag: 'tasks',
      auth: 'user',
      summary: "The caller's own tasks of this space, newest first (status filter; page/page_size or cursor)",
      query: schemas.listTasksQuery,
      response: schemas.taskList,
      handler: ({ principal, query }) => engine.tasks.listMine(principal!, query),
    }),
  ),
  route({
    method: 'post',
    path: `${base}/ai-create`,
    tag: 'tasks',
    auth: 'user',
    // A draft may be a paid model call: its own exact buckets, not the reconciled stream-open ones.
    rateLimits: ['aiDraftsPerCredential', 'aiDraftsPerApiKey'],
    rawResponse: { contentType: 'text/event-stream' },
    summary: 'Draft a task from a short prompt, streamed over SSE (progress, field or delta events, then draft or error); nothing is stored',
    body: schemas.taskAiCreateBody,
    response: draftEvents(schemas.taskDraft, 'task'),
    handler: (input) => serveDraft(input, engine, engine.tasks.ai.drafts.create),
  }),
  route({
    method: 'post',
    path: `${base}/description-optimize`,
    tag: 'tasks',
    auth: 'user',
    summary: "A clearer task description with the changes listed, in the description's language (built in, or the language model when configured and valid)",
    body: schemas.descriptionOptimizeBody,
    response: schemas.descriptionOptimizeResponse,
    handler: ({ body, response }) => engine.tasks.ai.optimize(body, clientGoneSignal(response)),
  }),
  // Declared before /:task_id so that these words are never read as ids.
  route({
    method: 'get',
    path: `${base}/events`,
    tag: 'streams',
    auth: 'user',
    rateLimits: ['streamOpensPerCredential', 'streamOpensPerApiKey'],
    rawResponse: { contentType: 'text/event-stream' },
    summary: "Server-sent events for every move of the caller's tasks and applications in this space (resume with Last-Event-ID)",
    query: lastEventQuery,
    response: z.union([schemas.taskStreamEvent, tooOldEvent]),
    handler: (input) =>
      serveEventStream(input, engine, base, (principal, afterSequence, listener) => engine.tasks.events.subscribe(principal, { afterSequence }, listener)),
  }),
  route({
    method: 'get',
    path: `${base}/hall`,
    tag: 'tasks',
    auth: 'user',
    summary: "The task hall: open tasks of the caller's space (filters, text query ranked by the matcher, sort; page/page_size or cursor)",
    query: schemas.taskHallQuery,
    response: schemas.taskHallResponse,
    handler: ({ principal, query }) => engine.tasks.hall(principal!, query),
  }),
  route({
    method: 'get',
    path: `${base}/market/stats`,
    tag: 'tasks',
    auth: 'user',
    summary: "The task market of the caller's space: counts by status and category, and the open bounties' count, total and median",
    response: schemas.taskStatsResponse,
    handler: ({ principal }) => engine.tasks.stats(principal!),
  }),
  route({
    method: 'get',
    path: `${base}/pushes/mine`,
    tag: 'tasks',
    auth: 'user',
    summary: "Push invitations and selections of the caller's skills, newest first (status filter; page/page_size or cursor)",
    query: schemas.listPushesQuery,
    response: schemas.pushList,
    handler: ({ principal, query }) => engine.tasks.pushesMine(principal!, query),
  }),
  route({
    method: 'post',
    path: `${base}/pushes/:push_id/respond`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040, 4090, 4092],
    summary: "The skill's owner answers a push: accept applies with the skill (a selection is then accepted at its price), decline closes it",
    params: schemas.pushIdParams,
    body: schemas.respondPushBody,
    response: z
      .object({
        push: schemas.pushResponse,
        application_id: z.string().nullable(),
        accepted: schemas.acceptedApplicationResponse.nullable(),
        acceptance_error: z.object({ code: z.number(), message: z.string(), data: z.unknown() }).nullable(),
      })
      .meta({ id: 'TaskPushAnswer' }),
    handler: ({ principal, params, body }) => engine.tasks.respond(principal!, params.push_id, body.decision, body.message),
  }),
  route({
    method: 'get',
    path: `${base}/:task_id/recommendations`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040],
    summary: "Active skills of the task's space ranked by the matcher for the task, with the score's parts (its publisher only)",
    params: schemas.taskIdParams,
    query: schemas.recommendationsQuery,
    response: schemas.recommendationResponse,
    handler: ({ principal, params, query }) => engine.tasks.recommendations(principal!, params.task_id, query.top_k),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/push-skill`,
    tag: 'tasks',
    auth: 'user',
    successStatus: 201,
    errors: [4030, 4040, 4090, 4092],
    summary: "Invite a skill's owner to apply to your open task (once per skill per task: 4092)",
    params: schemas.taskIdParams,
    body: schemas.pushSkillBody,
    response: schemas.pushResponse,
    handler: ({ principal, params, body }) => engine.tasks.pushSkill(principal!, params.task_id, body),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/select-skill`,
    tag: 'tasks',
    auth: 'user',
    successStatus: 201,
    errors: [4030, 4040, 4090, 4092],
    summary:
      'Pick a skill for your open task at a price (default: the bounty): nothing happens until its owner accepts, then the task is matched at that price',
    params: schemas.taskIdParams,
    body: schemas.selectSkillBody,
    response: schemas.pushResponse,
    handler: ({ principal, params, body }) => engine.tasks.selectSkill(principal!, params.task_id, body),
  }),
  route({
    method: 'get',
    path: `${base}/:task_id/pushes`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040],
    summary:
      'The invitations and selections sent for your task, newest first, whatever their status (its publisher only; status filter; page/page_size or cursor)',
    params: schemas.taskIdParams,
    query: schemas.listPushesQuery,
    response: schemas.pushList,
    handler: ({ principal, params, query }) => engine.tasks.pushesOfTask(principal!, params.task_id, query),
  }),
  route({
    method: 'delete',
    path: `${base}/:task_id/pushes/:push_id`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040, 4090],
    summary: "Withdraw an invitation or selection of your task that its skill's owner has not answered yet (then the skill may be pushed again)",
    params: schemas.taskPushParams,
    response: schemas.pushResponse,
    handler: ({ principal, params }) => engine.tasks.withdrawPush(principal!, params.task_id, params.push_id),
  }),
  route({
    method: 'get',
    path: `${base}/applications/mine`,
    tag: 'tasks',
    auth: 'user',
    summary: 'The applications the caller made in this space, newest first (status filter; page/page_size or cursor)',
    query: schemas.listApplicationsQuery,
    response: schemas.applicationList,
    handler: ({ principal, query }) => engine.tasks.applications.mine(principal!, query),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/applications`,
    idempotent: true,
    tag: 'tasks',
    auth: 'user',
    successStatus: 201,
    errors: [4030, 4040, 4090, 4091, 4092, 4220],
    summary: 'Apply to an open task of your space with one of your active skills (one live application per skill per task: 4092)',
    params: schemas.taskIdParams,
    body: schemas.createApplicationBody,
    response: schemas.applicationResponse,
    handler: async ({ principal, params, body, idempotency, response }) => {
      const { idempotency_key: _key, ...input } = body;
      return renderOutcome(response, await engine.tasks.applications.apply(principal!, params.task_id, input, idempotency));
    },
  }),
  route({
    method: 'get',
    path: `${base}/:task_id/applications`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040],
    summary: "A task's applications, newest first (its publisher only; status filter; page/page_size or cursor)",
    params: schemas.taskIdParams,
    query: schemas.listApplicationsQuery,
    response: schemas.applicationList,
    handler: ({ principal, params, query }) => engine.tasks.applications.listForTask(principal!, params.task_id, query),
  }),
  route({
    method: 'delete',
    path: `${base}/:task_id/applications/:app_id`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040, 4090],
    summary: 'The applicant withdraws a pending application',
    params: schemas.applicationParams,
    response: schemas.applicationResponse,
    handler: ({ principal, params }) => engine.tasks.applications.withdraw(principal!, params.task_id, params.app_id),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/applications/:app_id/reject`,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040, 4090],
    summary: "The task's publisher rejects a pending application",
    params: schemas.applicationParams,
    response: schemas.applicationResponse,
    handler: ({ principal, params }) => engine.tasks.applications.reject(principal!, params.task_id, params.app_id),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/applications/:app_id/accept`,
    idempotent: true,
    tag: 'tasks',
    auth: 'user',
    errors: [4020, 4021, 4030, 4040, 4090, 4091, 4093, 4220],
    summary:
      "The publisher accepts a pending application: the task is matched, its bounty hold becomes an escrow transaction at the agreed price (the applicant's proposed price, else the bounty), the other applications are rejected. Without max_price the ceiling is the bounty held (4093 above it)",
    params: schemas.applicationParams,
    body: schemas.acceptApplicationBody.optional(),
    response: schemas.acceptedApplicationResponse,
    handler: async ({ principal, params, body, idempotency, response }) =>
      renderOutcome(response, await engine.tasks.applications.accept(principal!, params.task_id, params.app_id, body?.max_price, idempotency)),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/rating`,
    tag: 'tasks',
    auth: 'user',
    successStatus: 201,
    errors: [4030, 4040, 4090, 4092],
    summary: "The publisher of a settled task rates the skill it was matched with, once (1 to 5, optional comment); the skill's quality score follows",
    params: schemas.taskIdParams,
    body: schemas.rateTaskBody,
    response: schemas.taskRatingResponse,
    handler: ({ principal, params, body }) => engine.tasks.rate(principal!, params.task_id, body),
  }),
  route({
    method: 'get',
    path: `${base}/:task_id`,
    tag: 'tasks',
    auth: 'user',
    errors: [4040],
    summary: 'Task details in its space (a draft: its publisher only); contact_info is shown to the publisher only',
    params: schemas.taskIdParams,
    response: schemas.taskResponse,
    handler: ({ principal, params }) => engine.tasks.get(principal!, params.task_id),
  }),
  route({
    method: 'put',
    path: `${base}/:task_id`,
    tag: 'tasks',
    auth: 'user',
    errors: [4020, 4021, 4030, 4040, 4090, 4092],
    summary:
      "Change a draft or open task (publisher only); a new bounty of an open task moves its hold by the difference, and may not drop below a pending selection's price (4092)",
    params: schemas.taskIdParams,
    body: schemas.updateTaskBody,
    response: schemas.taskResponse,
    handler: ({ principal, params, body }) => engine.tasks.update(principal!, params.task_id, body),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/close`,
    idempotent: true,
    tag: 'tasks',
    auth: 'user',
    errors: [4030, 4040, 4090, 4091, 4220],
    summary: 'Close a draft or open task (publisher only), releasing its bounty',
    params: schemas.taskIdParams,
    body: schemas.closeTaskBody.optional(),
    response: schemas.taskResponse,
    handler: async ({ principal, params, idempotency, response }) => renderOutcome(response, await engine.tasks.close(principal!, params.task_id, idempotency)),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/publish-draft`,
    idempotent: true,
    tag: 'tasks',
    auth: 'user',
    errors: [4020, 4021, 4030, 4040, 4090, 4091, 4220],
    summary: 'Publish a draft, restating delivery_hours (and optionally the bounty and deadline); holds the bounty',
    params: schemas.taskIdParams,
    body: schemas.publishDraftBody,
    response: schemas.taskResponse,
    handler: async ({ principal, params, body, idempotency, response }) =>
      publishAnswer(response, await engine.tasks.publishDraft(principal!, params.task_id, body, idempotency)),
  }),
  route({
    method: 'post',
    path: `${base}/:task_id/reuse`,
    idempotent: true,
    tag: 'tasks',
    auth: 'user',
    successStatus: 201,
    errors: [4020, 4021, 4030, 4040, 4091, 4220],
    summary:
      'Publish a new task from one of yours: delivery_hours and bounty_amount must be given again (4000 naming each missing one); other fields may change',
    params: schemas.taskIdParams,
    body: schemas.reuseTaskBody,
    response: schemas.taskResponse,
    handler: async ({ principal, params, body, idempotency, response }) => {
      const { idempotency_key: _key, ...input } = body;
      return publishAnswer(response, await engine.tasks.reuse(principal!, params.task_id, input, idempotency));
    },
  }),
  route({
    method: 'post',
    path: '/api/v1/admin/tasks/:task_id/cancel',
    idempotent: true,
    tag: 'admin',
    auth: 'admin',
    errors: [4040, 4090],
    summary: 'The operator takes an open task down (cancelled), releasing its bounty',
    params: schemas.taskIdParams,
    response: schemas.taskResponse,
    handler: async ({ params, idempotency, response }) => renderOutcome(response, await engine.tasks.cancel(params.task_id, idempotency)),
  }),
];
