/**
 * The work room: the task and skill market of people and agents. Skills (rows, hall, candidates from
 * a CV, AI drafts), tasks (rows, hall, applications, pushes and selections, acceptance, ratings,
 * events, AI drafting), and the per-applicant caps. A bounty is held and a task is paid through the
 * money room's door; the AI analysis comes through the market's.
 */
export { createSkillDrafts, type DraftEvent } from './draft-stream.ts';
export { createSkillCandidates } from './skill-candidates.ts';
export { createSkillHall } from './skill-hall.ts';
export { createSkillEngine } from './skills.ts';
export { createTaskAcceptance } from './task-acceptance.ts';
export { createTaskAi } from './task-ai.ts';
export { createTaskApplications } from './task-applications.ts';
export { createTaskEnd } from './task-end.ts';
export { createTaskEvents } from './task-events.ts';
export { createTaskExpiry } from './task-expiry.ts';
export { createTaskHall } from './task-hall.ts';
export { createTaskPublish } from './task-publish.ts';
export { DecideInTransaction } from './task-statement.ts';
export { createTaskPushes } from './task-pushes.ts';
export { createTaskRating } from './task-rating.ts';
export { newTaskRow } from './task-rows.ts';
export { createTaskEngine, shortfallError, type TaskOutcome } from './tasks.ts';
export { createTaskUpdate } from './task-update.ts';
