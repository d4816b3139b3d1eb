import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/skills.ts';
import { draftEvents, serveDraft } from '../draft-stream.ts';
import { renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

const base = '/api/v1/skills';
/** A draft may be a paid model call: its own exact buckets, not the reconciled stream-open ones. */
const draftLimits = ['aiDraftsPerCredential', 'aiDraftsPerApiKey'] as const;

/** The same route at both of the specification's spellings of the collection (with and without the slash). */
const bothSpellings = <T>(make: (path: string) => T) => [make(`${base}/`), make(base)];

export const skillRoutes = (engine: Engine) => [
  ...bothSpellings((path) =>
    route({
      method: 'post',
      path,
      idempotent: true,
      tag: 'skills',
      auth: 'user',
      successStatus: 201,
      errors: [4091, 4092, 4220],
      summary: "Create a skill in the caller's space (owner, space and source come from the credentials); 4092 past the skills one account keeps per space",
      body: schemas.createSkillBody,
      response: schemas.skillResponse,
      handler: async ({ principal, body, idempotency, response }) => {
        const { idempotency_key: _key, ...input } = body;
        return renderOutcome(response, await engine.skills.create(principal!, input, idempotency));
      },
    }),
  ),
  ...bothSpellings((path) =>
    route({
      method: 'get',
      path,
      tag: 'skills',
      auth: 'user',
      summary: "The caller's own skills, newest first (status filter; page/page_size or cursor)",
      query: schemas.listSkillsQuery,
      response: schemas.skillList,
      handler: ({ principal, query }) => engine.skills.listMine(principal!, query),
    }),
  ),
  // Declared before /:skill_id so that these words are never read as ids.
  route({
    method: 'get',
    path: `${base}/hall`,
    tag: 'skills',
    auth: 'user',
    summary: "The skill hall: active skills of the caller's space (filters, text query ranked by the matcher, sort; page/page_size or cursor)",
    query: schemas.hallQuery,
    response: schemas.hallResponse,
    handler: ({ principal, query }) => engine.skills.hall(principal!, query),
  }),
  route({
    method: 'post',
    path: `${base}/ai-create`,
    tag: 'skills',
    auth: 'user',
    rateLimits: draftLimits,
    rawResponse: { contentType: 'text/event-stream' },
    summary: 'Draft a skill from a short prompt, streamed over SSE (progress, field or delta events, then draft or error); nothing is stored',
    body: schemas.aiCreateBody,
    response: draftEvents(schemas.skillDraft, 'skill'),
    handler: (input) => serveDraft(input, engine, engine.skills.drafts.create),
  }),
  route({
    method: 'post',
    path: `${base}/extract`,
    idempotent: true,
    tag: 'skills',
    auth: 'user',
    successStatus: 201,
    errors: [4091, 4220],
    summary: 'Read a CV, portfolio or service description (English or Chinese) and store the skills found in it as candidates, each with its evidence',
    body: schemas.extractSkillsBody,
    response: schemas.extractSkillsResponse,
    handler: async ({ principal, body, idempotency, response }) =>
      renderOutcome(response, await engine.skills.candidates.extract(principal!, body.content, idempotency)),
  }),
  route({
    method: 'get',
    path: `${base}/candidates`,
    tag: 'skills',
    auth: 'user',
    summary: "The caller's skill candidates, newest first (status filter; page/page_size or cursor)",
    query: schemas.listCandidatesQuery,
    response: schemas.candidateList,
    handler: ({ principal, query }) => engine.skills.candidates.list(principal!, query),
  }),
  route({
    method: 'post',
    path: `${base}/candidates/:candidate_id/confirm`,
    tag: 'skills',
    auth: 'user',
    successStatus: 201,
    errors: [4040, 4090, 4092],
    summary: 'Turn one of your candidates into a skill, with optional edits; once (a second confirmation is 4090 with the skill_id)',
    params: schemas.candidateIdParams,
    body: schemas.confirmCandidateBody.optional(),
    response: schemas.skillResponse,
    handler: ({ principal, params, body }) => engine.skills.candidates.confirm(principal!, params.candidate_id, body ?? {}),
  }),
  route({
    method: 'get',
    path: `${base}/:skill_id`,
    tag: 'skills',
    auth: 'user',
    errors: [4040],
    summary: "Skill details, in the skill's own space (a deleted skill stays readable, with deleted_at)",
    params: schemas.skillIdParams,
    response: schemas.skillResponse,
    handler: ({ principal, params }) => engine.skills.get(principal!, params.skill_id),
  }),
  route({
    method: 'put',
    path: `${base}/:skill_id`,
    tag: 'skills',
    auth: 'user',
    errors: [4030, 4040, 4090],
    summary: 'Change a skill (owner only): the fields sent change, the others stay; status active or inactive',
    params: schemas.skillIdParams,
    body: schemas.updateSkillBody,
    response: schemas.skillResponse,
    handler: ({ principal, params, body }) => engine.skills.update(principal!, params.skill_id, body),
  }),
  route({
    method: 'delete',
    path: `${base}/:skill_id`,
    tag: 'skills',
    auth: 'user',
    errors: [4030, 4040],
    summary: 'Delete a skill (owner only): it leaves the lists and the hall, and stays readable by the tasks and ratings that name it',
    params: schemas.skillIdParams,
    response: schemas.deletedSkillResponse,
    handler: ({ principal, params }) => engine.skills.remove(principal!, params.skill_id),
  }),
  route({
    method: 'get',
    path: `${base}/:skill_id/ratings`,
    tag: 'skills',
    auth: 'user',
    errors: [4040],
    summary: 'Ratings of a skill, newest first, with their average, count and the quality score',
    params: schemas.skillIdParams,
    query: schemas.ratingsQuery,
    response: schemas.ratingList,
    handler: ({ principal, params, query }) => engine.skills.ratings(principal!, params.skill_id, query),
  }),
];
