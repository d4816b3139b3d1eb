import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/capabilities.ts';
import { idempotencyRequestOf, renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

export const capabilityRoutes = (engine: Engine) => [
  route({
    method: 'post', path: '/api/v1/capabilities', tag: 'capabilities', auth: 'user', successStatus: 201,
    summary: 'Register a capability; its owner and space come from the credentials',
    body: schemas.createCapabilityBody, response: schemas.capabilityResponse,
    handler: async ({ principal, body, request, response }) => {
      const { idempotency_key: _key, ...input } = body;
      return renderOutcome(response, await engine.capabilities.create(principal!, input, idempotencyRequestOf(request)));
    },
  }),
  route({
    method: 'get', path: '/api/v1/capabilities/:cap_id', tag: 'capabilities', auth: 'user', errors: [4040],
    summary: 'Capability details (visible within its own space)',
    params: schemas.capabilityIdParams, response: schemas.capabilityResponse,
    handler: ({ principal, params }) => engine.capabilities.get(principal!, params.cap_id),
  }),
];
