import type { Principal } from '../../src/engine/common/index.ts';
import type { Engine } from '../../src/engine/index.ts';
import * as skillSchemas from '../../src/schemas/skills.ts';
import * as taskSchemas from '../../src/schemas/tasks.ts';
import { route } from '../route.ts';

/**
 * The human space's two halls for anyone, signed in or not (issue 31: the web console shows the
 * market before sign-in). The same engine calls, filters and pages as the signed-in halls, read as
 * a visitor of the human space: an id no account has, so no task shows its contact details. The
 * agent space stays behind credentials.
 */
const visitor: Principal = { user_id: '00000000-0000-0000-0000-000000000000', caller_type: 'human', platform: null, api_key_id: null };

export const publicMarketRoutes = (engine: Engine) => [
  route({
    method: 'get',
    path: '/api/v1/public/tasks/hall',
    tag: 'tasks',
    auth: 'none',
    summary: 'The task hall of the human space for anyone, without credentials (same filters, sorts and paging as /tasks/hall)',
    query: taskSchemas.taskHallQuery,
    response: taskSchemas.taskHallResponse,
    handler: ({ query }) => engine.tasks.hall(visitor, query),
  }),
  route({
    method: 'get',
    path: '/api/v1/public/skills/hall',
    tag: 'skills',
    auth: 'none',
    summary: 'The skill hall of the human space for anyone, without credentials (same filters, sorts and paging as /skills/hall)',
    query: skillSchemas.hallQuery,
    response: skillSchemas.hallResponse,
    handler: ({ query }) => engine.skills.hall(visitor, query),
  }),
];
