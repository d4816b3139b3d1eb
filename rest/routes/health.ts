import { z } from 'zod';
import type { Engine } from '../../src/engine/index.ts';
import { AppError } from '../../src/errors.ts';
import { route } from '../route.ts';

const readiness = z.object({ database: z.boolean(), bus: z.boolean() }).meta({ id: 'Readiness' });

export const healthRoutes = (engine: Engine) => [
  route({
    method: 'get',
    path: '/healthz',
    tag: 'health',
    auth: 'none',
    rateLimits: [],
    summary: 'Liveness: the process is up',
    response: z.object({ status: z.literal('ok') }),
    handler: async () => ({ status: 'ok' }),
  }),
  route({
    method: 'get',
    path: '/readyz',
    tag: 'health',
    auth: 'none',
    errors: [5030],
    rateLimits: [],
    summary: 'Readiness: the database and the event bus both answer',
    response: readiness,
    handler: async () => {
      const state = await engine.readiness();
      if (!state.database || !state.bus) throw new AppError('unavailable', 'a dependency is down', state);
      return state;
    },
  }),
];
