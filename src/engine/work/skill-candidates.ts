import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { z } from 'zod';
import type { AiProvider } from '../../ai/provider.ts';
import { categoryCodes } from '../../domain/categories.ts';
import { type ExtractedSkill, extractSkills } from '../../domain/skill-extraction.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type SkillCandidateView, type SkillDraft, type SkillView, skillDraft } from '../../schemas/skills.ts';
import { validationError } from '../../schemas/validation.ts';
import { ownCandidate, authorize } from '../access/index.ts';
import { jsonOfAnswer } from '../market/index.ts';
import { type EngineDependencies, type Principal, newestFirstPage } from '../common/index.ts';
import type { Idempotency, IdempotencyRequest, Outcome } from '../money/index.ts';
import { skillView } from './skill-rows.ts';
import type { SkillEngine } from './skills.ts';

/**
 * Skill extraction and candidates (docs/skills.md "Extraction"): a text becomes stored candidate
 * skills, each with the sentences it came from; the owner confirms one into a skill, once.
 */
interface CandidateRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  name: string;
  description: string;
  category: string;
  tags: string[];
  evidence: string[];
  confidence: string;
  extracted_by: 'builtin' | 'ai';
  status: 'pending' | 'confirmed';
  skill_id: string | null;
  created_at: Date;
  confirmed_at: Date | null;
}

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());
const candidateView = (row: CandidateRow): SkillCandidateView => ({
  id: row.id,
  name: row.name,
  description: row.description,
  category: row.category,
  tags: row.tags,
  evidence: row.evidence,
  confidence: Number(row.confidence),
  extracted_by: row.extracted_by,
  status: row.status,
  skill_id: row.skill_id,
  created_at: iso(row.created_at)!,
  confirmed_at: iso(row.confirmed_at),
});

/** What a model's extraction must look like to be used; anything else falls back to the built-in one. */
const modelSkill = z.object({
  name: z.string().trim().min(1).max(limits.skillNameLengthMax),
  description: z.string().trim().min(1).max(limits.skillDescriptionLengthMax),
  category: z.enum(categoryCodes),
  tags: z.array(z.string().trim().min(1).max(limits.skillTagLengthMax)).max(limits.skillTagsMax).default([]),
  evidence: z.array(z.string().trim().min(1).max(limits.skillEvidenceLengthMax)).min(1).max(limits.skillEvidenceSentencesMax),
});
const modelAnswer = z.object({ skills: z.array(modelSkill).min(1).max(limits.skillCandidatesPerExtractMax) });

const extractionPrompt = [
  'You find the skills a person or agent can offer on a work marketplace, in the text they give (a CV, a portfolio, a service description).',
  `Answer with one JSON object and nothing else: {"skills": [{"name", "description", "category", "tags": [strings], "evidence": [sentences copied exactly from the text]}]}, at most ${limits.skillCandidatesPerExtractMax} skills.`,
  `category is one of: ${categoryCodes.join(', ')}. Write names and descriptions in the language of the text.`,
].join('\n');

export function createSkillCandidates({ db, now, log }: EngineDependencies, ai: AiProvider, idempotency: Idempotency, skills: SkillEngine) {
  /** The model's skills when it answers validly and its evidence is really in the text; else null. */
  async function modelExtraction(text: string): Promise<Omit<ExtractedSkill, 'key' | 'confidence'>[] | null> {
    if (!ai.configured) return null;
    const answer = await ai.chat(
      [
        { role: 'system', content: extractionPrompt },
        { role: 'user', content: text },
      ],
      { purpose: 'skill extraction', temperature: 0 },
    );
    if (answer === null) return null;
    const parsed = modelAnswer.safeParse(jsonOfAnswer(answer));
    const quoted = parsed.success && parsed.data.skills.every((skill) => skill.evidence.every((sentence) => text.includes(sentence)));
    if (!parsed.success || !quoted) {
      log.warn('AI skill extraction answer refused; using the built-in extraction', {
        reason: parsed.success ? 'evidence not found in the text' : 'not the expected JSON',
      });
      return null;
    }
    return parsed.data.skills;
  }

  async function extract(
    principal: Principal,
    content: string,
    request: IdempotencyRequest | null,
  ): Promise<Outcome<{ language: 'en' | 'zh'; extracted_by: 'builtin' | 'ai'; candidates: SkillCandidateView[] }>> {
    // The text is read (and the model asked) before the idempotency claim, so no transaction
    // waits on a model; a retried request reads it again and is then answered what the first stored.
    const builtIn = extractSkills(content);
    const fromModel = await modelExtraction(content);
    return idempotency.run(principal, request, 201, async ({ trx }) => {
      const extractedBy = fromModel ? ('ai' as const) : ('builtin' as const);
      const items = fromModel ? fromModel.map((skill) => ({ ...skill, confidence: 0.8 })) : builtIn.skills;
      const at = now();
      const rows = items.map((item) => ({
        id: randomUUID(),
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        name: item.name,
        description: item.description,
        category: item.category,
        tags: JSON.stringify(item.tags),
        evidence: JSON.stringify(item.evidence),
        confidence: item.confidence,
        extracted_by: extractedBy,
        status: 'pending',
        skill_id: null,
        created_at: at,
      }));
      const inserted = rows.length === 0 ? [] : ((await trx('skill_candidates').insert(rows).returning('*')) as CandidateRow[]);
      await dropOldestPending(trx, principal);
      return { language: builtIn.language, extracted_by: extractedBy, candidates: inserted.map(candidateView) };
    });
  }

  /** A user keeps at most skillPendingCandidatesMax unconfirmed candidates: the oldest beyond go. */
  async function dropOldestPending(trx: Knex, principal: Principal) {
    const keep = trx('skill_candidates')
      .where({ owner_user_id: principal.user_id, status: 'pending' })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limits.skillPendingCandidatesMax)
      .select('id');
    await trx('skill_candidates').where({ owner_user_id: principal.user_id, status: 'pending' }).whereNotIn('id', keep).delete();
  }

  async function list(principal: Principal, query: { status?: string; page: number; page_size: number; cursor?: string }) {
    const filtered = () => {
      const rows = db<CandidateRow>('skill_candidates').where({ owner_user_id: principal.user_id, owner_type: principal.caller_type });
      return query.status ? rows.where('status', query.status) : rows;
    };
    const listed = await newestFirstPage<CandidateRow>(filtered, query);
    return { ...listed, items: listed.items.map(candidateView) };
  }

  /**
   * The candidate, with the owner's edits, becomes a skill: once. The candidate row is locked and
   * moved from pending to confirmed in the same transaction that inserts the skill, so parallel
   * confirmations create one skill; the others hear 4090 with the skill's id.
   */
  function confirm(principal: Principal, id: string, edits: Partial<SkillDraft>): Promise<SkillView> {
    return withTransaction(db, async ({ trx }) => {
      const row = authorize(ownCandidate, principal, await trx<CandidateRow>('skill_candidates').where({ id }).forNoKeyUpdate().first(), 'candidate');
      if (row.status !== 'pending') {
        throw new AppError('invalid_state_transition', 'this candidate is already confirmed', {
          status: row.status,
          action: 'confirm',
          skill_id: row.skill_id,
        });
      }
      const draft = skillDraft.safeParse({ name: row.name, description: row.description, category: row.category, tags: row.tags, ...draftEdits(edits) });
      if (!draft.success) throw validationError(draft.error, 'body');
      const skill = await skills.insert(trx, principal, draft.data, 'extracted', row.id);
      await trx('skill_candidates').where({ id, status: 'pending' }).update({ status: 'confirmed', skill_id: skill.id, confirmed_at: now() });
      return skillView(skill);
    });
  }

  return { extract, list, confirm };
}

/** Edits arrive parsed (an amount as minor units); the draft schema parses them again from their text. */
function draftEdits(edits: Partial<SkillDraft>): Record<string, unknown> {
  const { ut_price: price, ...rest } = edits;
  return price === undefined ? rest : { ...rest, ut_price: `${price / 100n}.${String(price % 100n).padStart(2, '0')}` };
}

export type SkillCandidates = ReturnType<typeof createSkillCandidates>;
