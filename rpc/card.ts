import { z } from 'zod';
import { type RouteSpec, handled, route } from '../rest/route.ts';
import type { Config } from '../src/config.ts';

/**
 * The agent card, one document that clients of every generation accept:
 *
 * - v0.1 reads `url`, `version`, `capabilities`, `authentication.schemes`, `skills`.
 * - v0.3 reads `protocolVersion`, `preferredTransport`, `additionalInterfaces`, and
 *   OpenAPI-style `securitySchemes` (`{type: 'apiKey', in, name}`) with `security`.
 * - v1.0 (@a2a-js/sdk 1.x) picks its transport from `supportedInterfaces` (it prefers the entry
 *   with protocolVersion "1.0") and reads `securityRequirements`; each security scheme also
 *   carries its proto-JSON form (`apiKeySecurityScheme`, `httpAuthSecurityScheme`).
 *
 * Every interface is the same endpoint: the method names tell the generations apart.
 */
export const rpcPath = '/api/v1/rpc';
export const cardPaths = ['/.well-known/agent-card.json', '/.well-known/agent.json'] as const;

const apiKeyScheme = (name: string, description: string) => ({
  type: 'apiKey', in: 'header', name, description,
  apiKeySecurityScheme: { location: 'header', name, description },
});

export function agentCard(config: Config) {
  const base = config.publicBaseUrl.replace(/\/+$/, '');
  const url = `${base}${rpcPath}`;
  const modes = ['application/json', 'text/plain'];
  return {
    name: 'Agent Marketplace',
    description:
      'A marketplace where AI agents and humans buy and sell work. Send a message with a data part ' +
      '{"capability_id": "<uuid>"} to buy a capability: the price is frozen in escrow, the seller accepts and delivers, ' +
      'and you confirm with a message {"action": "confirm"} on the task (or dispute it).',
    url,
    version: '1.0.0',
    protocolVersion: '0.3.0',
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    provider: { organization: 'Agent Marketplace', url: base },
    documentationUrl: `${base}/docs`,
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false, extendedAgentCard: false },
    authentication: { schemes: ['apiKey', 'bearer'] },
    securitySchemes: {
      apiKey: apiKeyScheme('X-Api-Key', 'Platform API key (agent callers); send X-Platform-User-Id with it.'),
      platformUserId: apiKeyScheme('X-Platform-User-Id', 'The user id (UUID) the API key acts for.'),
      bearer: {
        type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Human access token.',
        httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT', description: 'Human access token.' },
      },
    },
    security: [{ apiKey: [], platformUserId: [] }, { bearer: [] }],
    securityRequirements: [
      { schemes: { apiKey: { list: [] }, platformUserId: { list: [] } } },
      { schemes: { bearer: { list: [] } } },
    ],
    defaultInputModes: modes,
    defaultOutputModes: modes,
    skills: [
      {
        id: 'buy-capability',
        name: 'Buy a capability',
        description:
          'Buys a listed capability with escrow. Message: a data part {capability_id, demand_id?, booked_hours?, input?} ' +
          'and optional text parts (kept as your note). The task moves submitted -> working -> input-required (delivered; the ' +
          'result is an artifact) -> completed once you confirm; metadata.marketplace carries the exact status.',
        tags: ['marketplace', 'escrow', 'purchase'],
        examples: ['{"capability_id": "6f1c2b9e-2a7d-4c1e-9a4b-1f0e8d7c6b5a", "input": {"url": "https://example.com/report.pdf"}}'],
        inputModes: modes,
        outputModes: modes,
      },
    ],
  };
}

const cardSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    url: z.string(),
    version: z.string(),
    protocolVersion: z.string(),
    preferredTransport: z.string(),
    supportedInterfaces: z.array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() })),
    capabilities: z.object({ streaming: z.boolean(), pushNotifications: z.boolean() }).loose(),
    skills: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) }).loose()),
  })
  .loose()
  .meta({ id: 'AgentCard', description: 'A2A agent card (v0.1, v0.3 and v1.0 fields in one document)' });

export const cardRoutes = (config: Config): RouteSpec[] =>
  cardPaths.map((path) =>
    route({
      method: 'get', path, tag: 'a2a', auth: 'none', rawResponse: { contentType: 'application/json' },
      summary: `A2A agent card${path.endsWith('agent.json') ? ' (legacy path)' : ''}, served bare (not enveloped)`,
      response: cardSchema,
      handler: async ({ response }) => {
        response.setHeader('Cache-Control', 'public, max-age=300');
        response.json(agentCard(config));
        return handled;
      },
    }),
  );
