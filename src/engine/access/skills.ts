import type { Rule } from './rules.ts';

/**
 * Who may see and change a skill, and whose candidates are whose (docs/skills.md). A skill lives
 * in its owner's space like a capability: the other space never sees it (4040). Within the space
 * anyone may read it, whatever its status, even deleted: tasks and ratings name it. Only its owner
 * changes it, and a deleted skill cannot be changed by anyone (4040).
 */
type SkillParty = { owner_user_id: string; owner_type: string; deleted_at: Date | string | null };

export const seeSkill: readonly Rule<SkillParty>[] = [
  { says: "the skill is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
];

export const manageSkill: readonly Rule<SkillParty>[] = [
  ...seeSkill,
  { says: 'the skill has not been deleted', holds: (_caller, row) => row.deleted_at === null, otherwise: 'not_found' },
  {
    says: "the skill is the caller's own",
    holds: (caller, row) => row.owner_user_id === caller.user_id,
    otherwise: { forbidden: 'only the owner can change a skill' },
  },
];

/**
 * A candidate is a private suggestion drawn from its owner's text: nobody else may know it exists,
 * so every other caller hears 4040, and so does the owner's id calling from the other space.
 */
type CandidateParty = { owner_user_id: string; owner_type: string };

export const ownCandidate: readonly Rule<CandidateParty>[] = [
  { says: "the candidate is the caller's own", holds: (caller, row) => row.owner_user_id === caller.user_id, otherwise: 'not_found' },
  { says: "the candidate was drawn in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
];
