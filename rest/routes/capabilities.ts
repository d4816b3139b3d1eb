import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/capabilities.ts';
import { renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

const base = '/api/v1/capabilities';

export const capabilityRoutes = (engine: Engine) => [
  route({
    method: 'post',
    path: base,
    idempotent: true,
    tag: 'capabilities',
    auth: 'user',
    successStatus: 201,
    errors: [4091, 4220],
    summary: 'Register a capability; its owner and space come from the credentials',
    body: schemas.createCapabilityBody,
    response: schemas.createdCapabilityResponse,
    handler: async ({ principal, body, idempotency, response }) => {
      const { idempotency_key: _key, ...input } = body;
      return renderOutcome(response, await engine.capabilities.create(principal!, input, idempotency));
    },
  }),
  route({
    method: 'get',
    path: base,
    tag: 'capabilities',
    auth: 'user',
    summary: "Capabilities of the caller's space, newest first (filters; page/page_size or cursor)",
    query: schemas.listCapabilitiesQuery,
    response: schemas.capabilityList,
    handler: ({ principal, query }) => engine.capabilities.list(principal!, query),
  }),
  // Declared before /:cap_id routes so that "batch" is never read as an id.
  route({
    method: 'post',
    path: `${base}/batch`,
    idempotent: true,
    tag: 'capabilities',
    auth: 'user',
    errors: [4091, 4220],
    summary: 'Register 1 to 50 capabilities; each item succeeds or fails on its own (200 with per-item results)',
    body: schemas.batchCapabilityBody,
    response: schemas.batchCapabilityResponse,
    handler: async ({ principal, body, idempotency, response }) =>
      renderOutcome(response, await engine.capabilities.batch(principal!, body.items, idempotency)),
  }),
  route({
    method: 'get',
    path: `${base}/:cap_id`,
    tag: 'capabilities',
    auth: 'user',
    errors: [4040],
    summary: 'Capability details (visible within its own space; a deleted one is 4040)',
    params: schemas.capabilityIdParams,
    response: schemas.capabilityResponse,
    handler: ({ principal, params }) => engine.capabilities.get(principal!, params.cap_id),
  }),
  route({
    method: 'put',
    path: `${base}/:cap_id`,
    tag: 'capabilities',
    auth: 'user',
    errors: [4030, 4040],
    summary: 'Change a capability (owner only): the fields sent change, the others stay; available=false withdraws it',
    params: schemas.capabilityIdParams,
    body: schemas.updateCapabilityBody,
    response: schemas.capabilityResponse,
    handler: ({ principal, params, body }) => engine.capabilities.update(principal!, params.cap_id, body),
  }),
  route({
    method: 'delete',
    path: `${base}/:cap_id`,
    tag: 'capabilities',
    auth: 'user',
    errors: [4030, 4040],
    summary: 'Delete a capability (owner only, soft): past transactions keep it; a second delete is 4040',
    params: schemas.capabilityIdParams,
    response: schemas.deletedCapabilityResponse,
    handler: ({ principal, params }) => engine.capabilities.remove(principal!, params.cap_id),
  }),
  route({
    method: 'post',
    path: `${base}/:cap_id/rotate-secret`,
    tag: 'capabilities',
    auth: 'user',
    errors: [4030, 4040],
    summary: "Replace the capability's callback secret (owner only); the new secret is shown only in this answer",
    params: schemas.capabilityIdParams,
    response: schemas.rotatedSecretResponse,
    handler: ({ principal, params }) => engine.capabilities.rotateSecret(principal!, params.cap_id),
  }),
];
