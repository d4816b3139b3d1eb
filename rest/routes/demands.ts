import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/demands.ts';
import * as matching from '../../src/schemas/matching.ts';
import { renderOutcome } from '../idempotency.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { route } from '../route.ts';

const base = '/api/v1/demands';

export const demandRoutes = (engine: Engine) => [
  route({
    method: 'post',
    path: base,
    idempotent: true,
    tag: 'demands',
    auth: 'user',
    successStatus: 201,
    errors: [4091, 4220],
    summary: "Publish a demand in the caller's space; with auto_accept, the first good match within max_price_ut is bought at once",
    body: schemas.createDemandBody,
    response: schemas.demandResponse,
    handler: async ({ principal, body, idempotency, response }) => {
      const { idempotency_key: _key, ...input } = body;
      return renderOutcome(response, await engine.demands.create(principal!, input, idempotency));
    },
  }),
  route({
    method: 'get',
    path: base,
    tag: 'demands',
    auth: 'user',
    summary: "The caller's own demands, newest first (status filter; page/page_size or cursor)",
    query: schemas.listDemandsQuery,
    response: schemas.demandList,
    handler: ({ principal, query }) => engine.demands.list(principal!, query),
  }),
  route({
    method: 'post',
    path: `${base}/evaluate-alignment`,
    tag: 'demands',
    auth: 'user',
    errors: [4040, 4090],
    summary: "Score one open demand against chosen capabilities of its space, with an explanation in the demand's language",
    body: matching.alignmentBody,
    response: matching.alignmentResponse,
    handler: ({ principal, body }) => engine.matching.evaluateAlignment(principal!, body),
  }),
  route({
    method: 'get',
    path: `${base}/:demand_id`,
    tag: 'demands',
    auth: 'user',
    errors: [4040],
    summary: 'Demand details: always for its requester; for others in its space while it is open',
    params: schemas.demandIdParams,
    response: schemas.demandResponse,
    handler: ({ principal, params }) => engine.demands.get(principal!, params.demand_id),
  }),
  route({
    method: 'post',
    path: `${base}/:demand_id/evaluate-clarity`,
    tag: 'demands',
    auth: 'user',
    errors: [4040],
    summary: "How clearly the demand says what is wanted: a score 0..1 with reasons and suggestions in the demand's language (readable as its details)",
    params: schemas.demandIdParams,
    body: schemas.evaluateClarityBody.optional(),
    response: schemas.clarityResponse,
    handler: ({ principal, params, response }) => engine.demands.evaluateClarity(principal!, params.demand_id, clientGoneSignal(response)),
  }),
  route({
    method: 'post',
    path: `${base}/:demand_id/cancel`,
    idempotent: true,
    tag: 'demands',
    auth: 'user',
    errors: [4030, 4040, 4090, 4091, 4092, 4220],
    summary: 'The requester cancels an open demand (4090 when cancelled, fulfilled or expired)',
    params: schemas.demandIdParams,
    body: schemas.cancelDemandBody.optional(),
    response: schemas.demandResponse,
    handler: async ({ principal, params, idempotency, response }) =>
      renderOutcome(response, await engine.demands.cancel(principal!, params.demand_id, idempotency)),
  }),
];
