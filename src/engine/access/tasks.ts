import type { Rule } from './rules.ts';

/**
 * Who may see and change a task (docs/tasks.md). A task lives in its publisher's space: the other
 * space never sees it (4040). A draft is its publisher's alone (4040 for anyone else); a published
 * task, whatever its status now, is readable in its space, so that applicants can follow it. Only
 * the publisher changes it (4030 for others who can see it).
 */
type TaskParty = { owner_user_id: string; owner_type: string; status: string };

export const seeTask: readonly Rule<TaskParty>[] = [
  { says: "the task is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
  {
    says: 'a draft is seen by its publisher only',
    holds: (caller, row) => row.status !== 'draft' || row.owner_user_id === caller.user_id,
    otherwise: 'not_found',
  },
];

export const manageTask: readonly Rule<TaskParty>[] = [
  ...seeTask,
  {
    says: "the task is the caller's own",
    holds: (caller, row) => row.owner_user_id === caller.user_id,
    otherwise: { forbidden: 'only the publisher can change a task' },
  },
];
