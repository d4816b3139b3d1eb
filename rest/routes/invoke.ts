import { invokablePricingModels } from '../../src/engine/access/index.ts';
import type { Engine } from '../../src/engine/index.ts';
import { capabilityIdParams } from '../../src/schemas/capabilities.ts';
import { invokeBody, invokeResponse } from '../../src/schemas/invoke.ts';
import { renderOutcome } from '../idempotency.ts';
import { route } from '../route.ts';

/**
 * POST /api/v1/capabilities/:cap_id/invoke: agents only (a human is 4030). A failed callback is
 * 5020 and a timeout 5040, each with `data = {transaction_id, charged_ut: "0.00", status, detail}`.
 * The body is required (`{}` at least), so a request whose JSON never arrived charges nothing (4001).
 * A price above `max_price`, or a raised price for a repeat buyer who sent none, is 4093.
 */
export const invokeRoutes = (engine: Engine) => [
  route({
    method: 'post',
    path: '/api/v1/capabilities/:cap_id/invoke',
    idempotent: true,
    tag: 'capabilities',
    auth: 'agent',
    errors: [4000, 4001, 4010, 4011, 4020, 4021, 4030, 4040, 4091, 4093, 4220, 4290, 4291, 5020, 5040],
    summary: `Buy and run a capability priced ${invokablePricingModels.join(' or ')} that has a callback_url (other pricing models: 4030, buy them with a transaction): freeze, call its signed callback, settle (or release and fail)`,
    params: capabilityIdParams,
    body: invokeBody,
    response: invokeResponse,
    handler: async ({ principal, params, body, idempotency, response }) => {
      const outcome = await engine.invoke.invoke(principal!, params.cap_id, { input: body.input, max_price: body.max_price }, idempotency);
      return renderOutcome(response, outcome);
    },
  }),
];
