import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { fingerprintOf } from '../src/engine/idempotency.ts';
import { uuid } from '../src/schemas/common.ts';
import { createSkillBody, hallArguments, listSkillsArguments, skillIdParams, updateSkillArguments } from '../src/schemas/skills.ts';
import { type McpTool, tool } from './tool.ts';

/**
 * The skill tools (issue 17): search the hall, create and manage one's own skills. Each parses its
 * arguments with the REST route's schema and calls the same engine use case, so the rules are the
 * same as REST's (space, owner, status table, limits).
 */
const createSkillOperation = 'mcp create_skill';
const fingerprintOfArguments = (input: Record<string, unknown>) =>
  fingerprintOf(Object.fromEntries(Object.entries(input).map(([name, value]) => [name, typeof value === 'bigint' ? value.toString() : value])));

export const skillTools: McpTool[] = [
  tool({
    name: 'search_skills',
    description:
      "Browse the skill hall of your space (agents see agents' skills, humans humans'): active skills only. q is a text query in English or " +
      'Chinese, ranked by relevance; filters category, mode (online/offline), city, min_price_ut/max_price_ut; sort relevance (default with q), ' +
      'newest (default without), price_asc, price_desc or quality; page/page_size (numbers) or cursor. Same as GET /api/v1/skills/hall.',
    input: hallArguments,
    writes: false,
    handler: (engine, principal, input) => engine.skills.hall(principal, input),
  }),
  tool({
    name: 'get_skill',
    description: 'Details of one skill of your space (a deleted one shows deleted_at). Same as GET /api/v1/skills/{skill_id}.',
    input: skillIdParams,
    writes: false,
    handler: (engine, principal, input) => engine.skills.get(principal, input.skill_id),
  }),
  tool({
    name: 'create_skill',
    description:
      'Offer a skill in your space: name, description (deliverables and boundaries) and category are required; mode online (default) or ' +
      'offline (then city is required), tags, up to 3 https image URLs, ut_price, pricing_model (fixed, per_hour, per_day, per_use, negotiable), ' +
      'min_duration/max_duration in hours. Pass an idempotency_key and reuse it when you retry: one key creates one skill; the key used is ' +
      'returned. Same as POST /api/v1/skills/. Answers {skill, idempotency_key}.',
    input: createSkillBody,
    writes: true,
    handler: async (engine, principal, input) => {
      const { idempotency_key: givenKey, ...command } = input;
      const key = givenKey ?? randomUUID();
      const request = { key, operation: createSkillOperation, fingerprint: fingerprintOfArguments(command) };
      const { data } = await engine.skills.create(principal, command, request);
      return { skill: data, idempotency_key: key };
    },
  }),
  tool({
    name: 'list_my_skills',
    description: 'Your own skills in this space, newest first; status active or inactive; page/page_size or cursor. Same as GET /api/v1/skills/.',
    input: listSkillsArguments,
    writes: false,
    handler: (engine, principal, input) => engine.skills.listMine(principal, input),
  }),
  tool({
    name: 'update_skill',
    description:
      'Change one of your skills: skill_id and the fields to change (the others stay); status active or inactive takes it into or out of ' +
      'the hall; null clears city, ut_price or a duration. Same as PUT /api/v1/skills/{skill_id}.',
    input: updateSkillArguments,
    writes: true,
    handler: (engine, principal, input) => {
      const { skill_id: id, ...patch } = input;
      return engine.skills.update(principal, id, patch);
    },
  }),
  tool({
    name: 'delete_skill',
    description: 'Delete one of your skills: it leaves your list and the hall, and stays readable by the tasks and ratings that name it. Same as DELETE /api/v1/skills/{skill_id}.',
    input: z.strictObject({ skill_id: uuid }),
    writes: true,
    handler: (engine, principal, input) => engine.skills.remove(principal, input.skill_id),
  }),
];
