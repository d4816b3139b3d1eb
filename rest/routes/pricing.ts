import type { Engine } from '../../src/engine/index.ts';
import * as schemas from '../../src/schemas/pricing.ts';
import { clientGoneSignal } from '../client-gone.ts';
import { route } from '../route.ts';

export const pricingRoutes = (engine: Engine) => [
  route({
    method: 'get',
    path: '/api/v1/pricing/suggestion',
    tag: 'pricing',
    auth: 'user',
    summary: "A price suggestion from the market's own listed and settled prices in the caller's space",
    query: schemas.pricingSuggestionQuery,
    response: schemas.pricingSuggestionResponse,
    handler: ({ principal, query, response }) => engine.pricing.suggest(principal!, query, clientGoneSignal(response)),
  }),
];
