import type { Engine } from '../../src/engine/index.ts';
import { capabilityIdParams } from '../../src/schemas/capabilities.ts';
import * as schemas from '../../src/schemas/matching.ts';
import { limits } from '../../src/limits.ts';
import { route } from '../route.ts';

/** Matching reads only: no idempotency key, and the answers change as the market does. */
export const matchingRoutes = (engine: Engine) => [
  route({
    method: 'post',
    path: '/api/v1/capabilities/match',
    tag: 'matching',
    auth: 'user',
    errors: [4040, 4090],
    summary: "The best capabilities of the demand's space for an open demand (top_k 1..50, default 10)",
    body: schemas.matchBody,
    response: schemas.matchResponse,
    handler: ({ principal, body }) => engine.matching.match(principal!, body),
  }),
  route({
    method: 'post',
    path: '/api/v1/capabilities/:cap_id/discover-demands',
    tag: 'matching',
    auth: 'user',
    errors: [4030, 4040],
    summary: "Open, unexpired demands of the capability's space that it matches (capability owner only)",
    params: capabilityIdParams,
    body: schemas.discoverBody.optional(),
    response: schemas.discoverResponse,
    handler: ({ principal, params, body }) => engine.matching.discoverDemands(principal!, params.cap_id, body ?? { top_k: limits.matchTopKDefault }),
  }),
];
