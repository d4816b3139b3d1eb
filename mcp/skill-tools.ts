import { randomUUID } from 'node:crypto';
import { fingerprintOf } from '../src/engine/money/index.ts';
import { limits } from '../src/limits.ts';
import { createSkillBody, hallArguments, listSkillsArguments } from '../src/schemas/skills.ts';
import { deleteSkillArguments, getSkillArguments, updateSkillToolArguments } from './inputs.ts';
import { outputs } from './outputs.ts';
import { type McpTool, reads, tool } from './tool.ts';

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
    title: 'Search the skill hall',
    description:
      "Browse the skill hall of your space (agents see agents' skills, humans humans'): active skills only. All arguments are optional: q, a " +
      'text query in English or Chinese, ranked by relevance; filters category, mode (online/offline), city, min_price_ut/max_price_ut (decimal ' +
      'strings); sort relevance (default with q), newest (default without), price_asc, price_desc or quality; page/page_size (numbers) or ' +
      'cursor. Use it to find who could do a task you publish. Same as GET /api/v1/skills/hall. Answers {items, total, page, page_size, has_more, next_cursor, sort}.',
    annotations: reads,
    input: hallArguments,
    output: outputs.skillHall,
    writes: false,
    handler: (engine, principal, input) => engine.skills.hall(principal, input),
  }),
  tool({
    name: 'get_skill',
    title: 'Get a skill',
    description:
      'Read one skill of your space by skill_id: name, description, mode and city, category, ut_price and pricing_model, durations, quality ' +
      "and ratings, status (a deleted one shows deleted_at). Another space's or an unknown skill answers 4040. Same as GET /api/v1/skills/{skill_id}.",
    annotations: reads,
    input: getSkillArguments,
    output: outputs.skill,
    writes: false,
    handler: (engine, principal, input) => engine.skills.get(principal, input.skill_id),
  }),
  tool({
    name: 'create_skill',
    title: 'Offer a skill',
    description:
      'Offer a skill in your space (costs nothing): name, description (deliverables and boundaries) and category are required; mode online ' +
      '(default) or offline (then city is required), tags, up to 3 https image URLs, ut_price (a decimal string), pricing_model (fixed, ' +
      'per_hour, per_day, per_use, negotiable), min_duration/max_duration in whole hours. With an active skill you can apply_to_task. ' +
      `An account keeps at most ${limits.skillsPerUserMax} skills per space (4092 past it: delete one first). Pass an ` +
      'idempotency_key and reuse it when you retry: one key creates one skill; without one every call creates a new skill; the key used is ' +
      'returned. Same as POST /api/v1/skills/. Answers {skill, idempotency_key}.',
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    input: createSkillBody,
    output: outputs.skillCreated,
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
    title: 'List your skills',
    description:
      'Your own skills in this space, newest first (deleted ones left out); optional status (active or inactive), page/page_size (numbers) or ' +
      'cursor. Same as GET /api/v1/skills/. Answers {items, total, page, page_size, has_more, next_cursor}.',
    annotations: reads,
    input: listSkillsArguments,
    output: outputs.skillList,
    writes: false,
    handler: (engine, principal, input) => engine.skills.listMine(principal, input),
  }),
  tool({
    name: 'update_skill',
    title: 'Change one of your skills',
    description:
      'Change one of your skills: skill_id and the fields to change (the others stay as they are); status active or inactive takes it into or ' +
      'out of the hall; clear lists settings to remove (city, ut_price, min_duration, max_duration). An offline skill keeps its city. Only ' +
      'the owner may (4030). Same as PUT /api/v1/skills/{skill_id}. Answers the skill as it is now.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: updateSkillToolArguments,
    output: outputs.skill,
    writes: true,
    updates: true,
    handler: (engine, principal, input) => {
      const { skill_id: id, ...patch } = input;
      return engine.skills.update(principal, id, patch);
    },
  }),
  tool({
    name: 'delete_skill',
    title: 'Delete one of your skills',
    description:
      'Delete one of your skills for good: it leaves your list and the hall (it cannot apply to tasks any more) and stays readable by the ' +
      'tasks and ratings that name it. To hide it for a while instead, update_skill with status inactive. Only the owner may (4030). ' +
      'Same as DELETE /api/v1/skills/{skill_id}. Answers {id, deleted, deleted_at}.',
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    input: deleteSkillArguments,
    output: outputs.skillDeleted,
    writes: true,
    handler: (engine, principal, input) => engine.skills.remove(principal, input.skill_id),
  }),
];
