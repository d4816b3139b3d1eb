import { z } from 'zod';
import { type RouteSpec, handled, route } from '../rest/route.ts';
import type { Config } from '../src/config.ts';
import { type Generation, generationOfHeader, requestedVersionOf } from './shapes.ts';

/**
 * The agent card, in the form the caller's generation reads, chosen by the `A2A-Version` request
 * header (or query parameter) as for the shared `tasks/*` methods (docs/decisions/a2a.md, "The
 * agent card"):
 *
 * - `A2A-Version: 1.0` (@a2a-js/sdk 1.x sends it), or a version this server does not speak,
 *   whose client learns here which are: exactly the v1.0 AgentCard. It picks its
 *   transport from `supportedInterfaces` and reads `securitySchemes` in the proto-JSON form
 *   (`{apiKeySecurityScheme: {...}}`, one key per scheme) with `securityRequirements`.
 * - no header (@a2a-js/sdk 0.2/0.3, the v0.1 samples, the conformance kit): the v1.0 card plus
 *   the fields older clients locate the endpoint by: `url`, `protocolVersion`,
 *   `preferredTransport`, `additionalInterfaces`. Its security schemes are still the exact v1.0
 *   form (a strict v1.0 parser refuses v0.3's flat `{type, in, name}` beside it); SDK 0.3 reads
 *   that form through its proto-JSON fallback, and 0.2 and the v0.1 samples do not read it.
 * - `A2A-Version: 0.1` to `0.3`: the v0.3 card, with OpenAPI-style `securitySchemes` and `security`, and
 *   v0.1's `authentication.schemes`.
 *
 * Every interface is the same endpoint: the method names tell the generations apart.
 */
export const rpcPath = '/api/v1/rpc';
/**
 * The well-known paths, and the same under the endpoint: the Python card resolvers (the SDK's
 * and the v0.1 samples') and the conformance kit append the well-known path to the agent URL
 * they are given.
 */
export const cardPaths = [
  '/.well-known/agent-card.json',
  '/.well-known/agent.json',
  `${rpcPath}/.well-known/agent-card.json`,
  `${rpcPath}/.well-known/agent.json`,
  // @a2a-js/sdk 1.x resolves the well-known path against the URL it is given as a URL reference:
  // given the endpoint's URL (no trailing slash), it asks beside the endpoint, here.
  '/api/v1/.well-known/agent-card.json',
] as const;

const agentDescription =
  'A marketplace where AI agents and humans buy and sell work. Say what you need in a text message: it becomes your ' +
  'demand, and the answer lists the best matching capabilities, numbered; reply with a number to buy one, or in other ' +
  'words to look again (when nothing matches yet, the task stays working and your demand stays open to sellers). Or ' +
  'buy directly with a data part {"capability_id": "<uuid>"}. Either way the price is frozen in escrow, the seller ' +
  'accepts and delivers, and you reply "confirm" (or {"action": "confirm"}) on the task, or "dispute <reason>".';

const schemes = {
  apiKey: { name: 'X-Api-Key', description: 'Platform API key (agent callers); send X-Platform-User-Id with it.' },
  platformUserId: { name: 'X-Platform-User-Id', description: 'The user id (UUID) the API key acts for.' },
  bearer: { bearerFormat: 'JWT', description: 'Human access token.' },
};

const v10SecuritySchemes = {
  apiKey: { apiKeySecurityScheme: { location: 'header', ...schemes.apiKey } },
  platformUserId: { apiKeySecurityScheme: { location: 'header', ...schemes.platformUserId } },
  bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', ...schemes.bearer } },
};

const v03SecuritySchemes = {
  apiKey: { type: 'apiKey', in: 'header', ...schemes.apiKey },
  platformUserId: { type: 'apiKey', in: 'header', ...schemes.platformUserId },
  bearer: { type: 'http', scheme: 'bearer', ...schemes.bearer },
};

function v10Card(config: Config) {
  const base = config.publicBaseUrl.replace(/\/+$/, '');
  const url = `${base}${rpcPath}`;
  const modes = ['application/json', 'text/plain'];
  return {
    name: 'Agent Marketplace',
    description: agentDescription,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    provider: { organization: 'Agent Marketplace', url: base },
    version: '1.0.0',
    documentationUrl: `${base}/docs`,
    capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: false },
    securitySchemes: v10SecuritySchemes,
    securityRequirements: [{ schemes: { apiKey: { list: [] }, platformUserId: { list: [] } } }, { schemes: { bearer: { list: [] } } }],
    defaultInputModes: modes,
    defaultOutputModes: modes,
    skills: [
      {
        id: 'buy-by-conversation',
        name: 'Find and buy by conversation',
        description:
          'Send text only, in your own words. The task answers input-required with up to 5 candidates (a numbered text ' +
          'and a data part {demand_id, candidates}); reply "1" (or "buy 2", or a capability id) to buy, or describe the ' +
          'need differently to match again. When nothing matches, the task is working: your demand is open to sellers; ' +
          'send other words to match again, or cancel the task. After a pick the same task follows the purchase.',
        tags: ['marketplace', 'search', 'conversation', 'purchase'],
        examples: ['Translate a 10-page PDF contract from German to English', '1', 'confirm'],
        inputModes: modes,
        outputModes: modes,
      },
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

const v01Authentication = { schemes: ['apiKey', 'bearer'] };

/**
 * The agent card for a caller of `generation` (from its `A2A-Version` header; none: hybrid).
 * `legacyPath`: asked at `agent.json`, the path of v0.1/v0.2, whose clients send no header and
 * learn the credentials from v0.1's `authentication.schemes`; clients that read the v1.0 card
 * without a header (the TCK) ask `agent-card.json` and never see that v0.1 object.
 */
export function agentCard(config: Config, generation: Generation, legacyPath = false) {
  const card = v10Card(config);
  if (generation === 'v1.0') return card;
  const url = card.supportedInterfaces[0]!.url;
  const locators = { url, protocolVersion: '0.3.0', preferredTransport: 'JSONRPC', additionalInterfaces: [{ url, transport: 'JSONRPC' }] };
  if (generation === 'hybrid') return legacyPath ? { ...card, ...locators, authentication: v01Authentication } : { ...card, ...locators };
  const { securityRequirements: _requirements, supportedInterfaces: _interfaces, ...rest } = card;
  return {
    ...rest,
    ...locators,
    capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: false },
    authentication: v01Authentication,
    securitySchemes: v03SecuritySchemes,
    security: [{ apiKey: [], platformUserId: [] }, { bearer: [] }],
  };
}

const cardSchema = z
  .object({
    name: z.string(),
    description: z.string(),
    url: z.string().optional(),
    version: z.string(),
    protocolVersion: z.string().optional(),
    preferredTransport: z.string().optional(),
    supportedInterfaces: z.array(z.object({ url: z.string(), protocolBinding: z.string(), protocolVersion: z.string() })).optional(),
    capabilities: z.object({ streaming: z.boolean(), pushNotifications: z.boolean() }).loose(),
    skills: z.array(z.object({ id: z.string(), name: z.string(), description: z.string(), tags: z.array(z.string()) }).loose()),
  })
  .loose()
  .meta({
    id: 'AgentCard',
    description: 'A2A agent card in the form of the A2A-Version request header (none: v1.0 plus the fields v0.x clients locate the endpoint by)',
  });

export const cardRoutes = (config: Config): RouteSpec[] =>
  cardPaths.map((path) =>
    route({
      method: 'get',
      path,
      tag: 'a2a',
      auth: 'none',
      rawResponse: { contentType: 'application/json' },
      summary: `A2A agent card${path.endsWith('agent.json') ? ' (legacy path)' : path.startsWith(rpcPath) ? ' (under the endpoint)' : path.startsWith('/api/') ? ' (beside the endpoint)' : ''}, served bare (not enveloped)`,
      response: cardSchema,
      handler: async ({ request, response }) => {
        response.setHeader('Cache-Control', 'public, max-age=300');
        response.setHeader('Vary', 'A2A-Version');
        response.json(agentCard(config, generationOfHeader(requestedVersionOf(request)) ?? 'v1.0', path.endsWith('/agent.json')));
        return handled;
      },
    }),
  );
