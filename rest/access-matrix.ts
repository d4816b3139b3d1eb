import type { AuthRequirement, RouteSpec } from './route.ts';

/**
 * Who may call each route (issue 16, point 4): the access matrix, beside the route table. Every
 * route has a row here; test/access/access-matrix.test.ts calls every route as every kind of caller and
 * checks the answer against it, and fails for a route without a row, so a new route cannot ship
 * without saying who may call it.
 *
 * A row names the resource the route acts on and the outcome for each party of it, in a world of
 * three agents and one resource of each kind, all the owner's: a capability and a demand of the
 * owner's, and a transaction the owner bought from the counterparty (docs/decisions/identity-and-access.md "The
 * access matrix"). `other_space` is the owner's own user id calling as a human (a JWT). What the
 * credentials alone decide (none, mixed, revoked, expired, the admin token, user credentials on an
 * admin route) follows from the route's `auth` in `credentialOutcomes`.
 *
 * Outcomes: `allow` (the access rules let the call through; it may still fail for another reason,
 * such as the transaction's state), or the error code of the refusal: 4010 unauthenticated, 4011
 * mixed credentials, 4030 forbidden (the caller sees the resource but may not do this), 4040 not
 * found (the caller may not know the resource exists).
 */
export type Outcome = 'allow' | 4010 | 4011 | 4012 | 4030 | 4040;
export type Party = 'owner' | 'counterparty' | 'other_user' | 'other_space';
export type CredentialKind = 'anonymous' | 'mixed_credentials' | 'revoked_key' | 'expired_token' | 'admin_token';
/** The resource a route's path or body names; `self`: the caller's own (wallet, lists, new rows); `public`: none. */
export type Resource =
  | 'public'
  | 'self'
  | 'capability'
  | 'skill'
  | 'skill_candidate'
  | 'task'
  | 'application'
  | 'push'
  | 'demand'
  | 'transaction'
  | 'device_request'
  | 'oauth_request'
  | 'api_key'
  | 'webhook'
  | 'protocol';

export interface RouteAccess {
  resource: Resource;
  /** Per party; a party left out is not one of this resource's (a capability has no counterparty). */
  parties: Partial<Record<Party, Outcome>>;
  /**
   * The route needs no credentials: anyone may call it, with or without them. Said here and not
   * only by the route's `auth`, so that a public route declared closed (a health probe asking for
   * a key) fails the matrix instead of changing what the matrix expects.
   */
  open?: true;
}

const everyone: RouteAccess = { resource: 'public', parties: { owner: 'allow', other_user: 'allow', other_space: 'allow' }, open: true };
const ownSpace: RouteAccess = { resource: 'self', parties: { owner: 'allow', other_user: 'allow', other_space: 'allow' } };
const adminOnly: RouteAccess = { resource: 'public', parties: { owner: 4010, other_user: 4010, other_space: 4010 } };
const humanOnly = (resource: Resource): RouteAccess => ({ resource, parties: { owner: 4030, other_user: 4030, other_space: 'allow' } });
/** Visible to the owner's space while it lasts, changed by the owner only. */
const seenInSpace: RouteAccess['parties'] = { owner: 'allow', other_user: 'allow', other_space: 4040 };
const ownerOnly: RouteAccess['parties'] = { owner: 'allow', other_user: 4030, other_space: 4040 };
const buyerMove: RouteAccess = { resource: 'transaction', parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 } };
const sellerMove: RouteAccess = { resource: 'transaction', parties: { owner: 4030, counterparty: 'allow', other_user: 4040, other_space: 4040 } };
/** A webhook is its owner's alone, in its space: nobody else may know it exists. */
const ownWebhook: RouteAccess = { resource: 'webhook', parties: { owner: 'allow', other_user: 4040, other_space: 4040 } };
const eitherParty: RouteAccess = { resource: 'transaction', parties: { owner: 'allow', counterparty: 'allow', other_user: 4040, other_space: 4040 } };

export const routeAccess: Record<string, RouteAccess> = {
  'GET /healthz': everyone,
  'GET /readyz': everyone,
  'GET /api/v1/categories': everyone,
  'GET /api/v1/public/openapi.json': everyone,
  'GET /api/v1/public/tasks/hall': everyone,
  'GET /api/v1/public/skills/hall': everyone,
  'GET /.well-known/agent-card.json': everyone,
  'GET /.well-known/agent.json': everyone,
  'GET /api/v1/rpc/.well-known/agent-card.json': everyone,
  'GET /api/v1/rpc/.well-known/agent.json': everyone,
  'GET /api/v1/.well-known/agent-card.json': everyone,
  'POST /api/v1/auth/signup': everyone,
  'POST /api/v1/auth/login': everyone,
  'POST /api/v1/auth/device-auth': everyone,
  'POST /api/v1/auth/device-auth/poll': { resource: 'device_request', parties: everyone.parties, open: true },
  // JSON-RPC and MCP answer in their own protocols: their methods and tools have rows of their own.
  'POST /api/v1/rpc': { resource: 'protocol', parties: {} },
  'POST /mcp': { resource: 'protocol', parties: {} },

  'GET /api/v1/auth/me': ownSpace,
  'POST /api/v1/auth/device-auth/lookup': humanOnly('device_request'),
  'POST /api/v1/auth/device-auth/confirm': humanOnly('device_request'),
  // A pending MCP sign-in request is answered by whichever person signs in on the consent page (its id is unguessable).
  'GET /api/v1/auth/oauth/requests/:request_id': humanOnly('oauth_request'),
  'POST /api/v1/auth/oauth/requests/:request_id/decision': humanOnly('oauth_request'),
  'GET /api/v1/auth/api-keys': humanOnly('self'),
  'POST /api/v1/auth/api-keys': humanOnly('self'),
  'GET /api/v1/auth/agent-transactions': humanOnly('self'),
  'DELETE /api/v1/auth/api-keys/:id': humanOnly('api_key'),
  // The key's owner as a person only: an agent never changes a budget, not even its own key's.
  'GET /api/v1/auth/api-keys/:id/budget': humanOnly('api_key'),
  'PUT /api/v1/auth/api-keys/:id/budget': humanOnly('api_key'),
  'DELETE /api/v1/auth/api-keys/:id/budget': humanOnly('api_key'),
  'POST /api/v1/admin/api-keys': adminOnly,
  'POST /api/v1/admin/api-keys/:id/links': adminOnly,
  'POST /api/v1/admin/transactions/:tx_id/resolve': adminOnly,
  'POST /api/v1/admin/wallet/credit': adminOnly,

  'GET /api/v1/wallet/': ownSpace,
  'GET /api/v1/wallet': ownSpace,
  'GET /api/v1/wallet/transactions': ownSpace,
  'GET /api/v1/wallet/stats': ownSpace,
  'GET /api/v1/wallet/rates': ownSpace,
  'GET /api/v1/wallet/exchange-rates/latest': ownSpace,
  'GET /api/v1/pricing/suggestion': ownSpace,

  'POST /api/v1/capabilities': ownSpace,
  'GET /api/v1/capabilities': ownSpace,
  'POST /api/v1/capabilities/batch': ownSpace,
  'GET /api/v1/capabilities/:cap_id': { resource: 'capability', parties: seenInSpace },
  'PUT /api/v1/capabilities/:cap_id': { resource: 'capability', parties: ownerOnly },
  'DELETE /api/v1/capabilities/:cap_id': { resource: 'capability', parties: ownerOnly },
  'POST /api/v1/capabilities/:cap_id/rotate-secret': { resource: 'capability', parties: ownerOnly },
  'POST /api/v1/capabilities/:cap_id/discover-demands': { resource: 'capability', parties: ownerOnly },
  // An agent buys another's capability: the owner may not buy its own, a human may not invoke.
  'POST /api/v1/capabilities/:cap_id/invoke': { resource: 'capability', parties: { owner: 4030, other_user: 'allow', other_space: 4030 } },

  // Skills live in their owner's space; a candidate is a private suggestion, hidden from everyone else.
  'POST /api/v1/skills/': ownSpace,
  'POST /api/v1/skills': ownSpace,
  'GET /api/v1/skills/': ownSpace,
  'GET /api/v1/skills': ownSpace,
  'GET /api/v1/skills/hall': ownSpace,
  'POST /api/v1/skills/ai-create': ownSpace,
  'POST /api/v1/skills/extract': ownSpace,
  'GET /api/v1/skills/candidates': ownSpace,
  'POST /api/v1/skills/candidates/:candidate_id/confirm': { resource: 'skill_candidate', parties: { owner: 'allow', other_user: 4040, other_space: 4040 } },
  'GET /api/v1/skills/:skill_id': { resource: 'skill', parties: seenInSpace },
  'PUT /api/v1/skills/:skill_id': { resource: 'skill', parties: ownerOnly },
  'DELETE /api/v1/skills/:skill_id': { resource: 'skill', parties: ownerOnly },
  'GET /api/v1/skills/:skill_id/ratings': { resource: 'skill', parties: seenInSpace },

  // Tasks: a published one is seen in its space, a draft by its publisher only; the publisher changes it.
  'POST /api/v1/tasks/': ownSpace,
  'POST /api/v1/tasks': ownSpace,
  'GET /api/v1/tasks/': ownSpace,
  'GET /api/v1/tasks': ownSpace,
  'GET /api/v1/tasks/hall': ownSpace,
  'GET /api/v1/tasks/events': ownSpace,
  'POST /api/v1/tasks/ai-create': ownSpace,
  'POST /api/v1/tasks/description-optimize': ownSpace,
  'GET /api/v1/tasks/market/stats': ownSpace,
  'GET /api/v1/tasks/:task_id': { resource: 'task', parties: seenInSpace },
  'PUT /api/v1/tasks/:task_id': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/tasks/:task_id/close': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/tasks/:task_id/publish-draft': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/tasks/:task_id/reuse': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/admin/tasks/:task_id/cancel': adminOnly,
  // Applications: the counterparty applied to the owner's task with a skill of its own.
  'GET /api/v1/tasks/applications/mine': ownSpace,
  'POST /api/v1/tasks/:task_id/applications': { resource: 'task', parties: { owner: 4030, counterparty: 'allow', other_user: 4030, other_space: 4040 } },
  'GET /api/v1/tasks/:task_id/applications': { resource: 'task', parties: { owner: 'allow', counterparty: 4030, other_user: 4030, other_space: 4040 } },
  'DELETE /api/v1/tasks/:task_id/applications/:app_id': {
    resource: 'application',
    parties: { owner: 4030, counterparty: 'allow', other_user: 4040, other_space: 4040 },
  },
  'POST /api/v1/tasks/:task_id/applications/:app_id/reject': {
    resource: 'application',
    parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 },
  },
  'POST /api/v1/tasks/:task_id/rating': { resource: 'task', parties: ownerOnly },
  'GET /api/v1/tasks/:task_id/recommendations': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/tasks/:task_id/push-skill': { resource: 'task', parties: ownerOnly },
  'POST /api/v1/tasks/:task_id/select-skill': { resource: 'task', parties: ownerOnly },
  'GET /api/v1/tasks/pushes/mine': ownSpace,
  // The owner pushed the counterparty's skill to its task: only the skill's owner answers.
  'POST /api/v1/tasks/pushes/:push_id/respond': { resource: 'push', parties: { owner: 4030, counterparty: 'allow', other_user: 4040, other_space: 4040 } },
  // The publisher lists the pushes of its task and withdraws one; the skill's owner knows the push but may not withdraw it.
  'GET /api/v1/tasks/:task_id/pushes': { resource: 'task', parties: { owner: 'allow', counterparty: 4030, other_user: 4030, other_space: 4040 } },
  'DELETE /api/v1/tasks/:task_id/pushes/:push_id': { resource: 'push', parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 } },
  'POST /api/v1/tasks/:task_id/applications/:app_id/accept': {
    resource: 'application',
    parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 },
  },

  'POST /api/v1/demands': ownSpace,
  'GET /api/v1/demands': ownSpace,
  'GET /api/v1/demands/:demand_id': { resource: 'demand', parties: seenInSpace },
  'POST /api/v1/demands/:demand_id/evaluate-clarity': { resource: 'demand', parties: seenInSpace },
  'POST /api/v1/demands/:demand_id/cancel': { resource: 'demand', parties: ownerOnly },
  'POST /api/v1/capabilities/match': { resource: 'demand', parties: seenInSpace },
  'POST /api/v1/demands/evaluate-alignment': { resource: 'demand', parties: seenInSpace },

  // Buying names the counterparty's capability in the body: any agent may, a human may not see it.
  'POST /api/v1/transactions': { resource: 'self', parties: { owner: 'allow', other_user: 'allow', other_space: 4040 } },
  'GET /api/v1/transactions': ownSpace,
  'POST /api/v1/webhooks': ownSpace,
  'GET /api/v1/webhooks': ownSpace,
  'GET /api/v1/webhooks/:webhook_id': ownWebhook,
  'DELETE /api/v1/webhooks/:webhook_id': ownWebhook,
  'GET /api/v1/webhooks/:webhook_id/deliveries': ownWebhook,
  'POST /api/v1/webhooks/:webhook_id/ping': ownWebhook,
  'POST /api/v1/webhooks/:webhook_id/rotate-secret': ownWebhook,
  'GET /api/v1/transactions/events': ownSpace,
  'GET /api/v1/transactions/:tx_id': eitherParty,
  'GET /api/v1/transactions/:tx_id/events': eitherParty,
  'POST /api/v1/transactions/:tx_id/freeze': buyerMove,
  'POST /api/v1/transactions/:tx_id/confirm': buyerMove,
  'POST /api/v1/transactions/:tx_id/cancel': buyerMove,
  'POST /api/v1/transactions/:tx_id/dispute': buyerMove,
  'POST /api/v1/transactions/:tx_id/accept': sellerMove,
  'POST /api/v1/transactions/:tx_id/reject': sellerMove,
  'POST /api/v1/transactions/:tx_id/deliver': sellerMove,
};

/** What the credentials alone decide, by the route's declared `auth`. */
export const credentialOutcomes: Record<AuthRequirement, Record<CredentialKind, Outcome>> = {
  none: { anonymous: 'allow', mixed_credentials: 'allow', revoked_key: 'allow', expired_token: 'allow', admin_token: 'allow' },
  user: { anonymous: 4010, mixed_credentials: 4011, revoked_key: 4010, expired_token: 4010, admin_token: 4010 },
  agent: { anonymous: 4010, mixed_credentials: 4011, revoked_key: 4010, expired_token: 4010, admin_token: 4010 },
  human: { anonymous: 4010, mixed_credentials: 4011, revoked_key: 4010, expired_token: 4010, admin_token: 4010 },
  admin: { anonymous: 4010, mixed_credentials: 4010, revoked_key: 4010, expired_token: 4010, admin_token: 'allow' },
};

/**
 * /mcp answers credentials as the MCP authorization specification's clients need (mcp/authentication.ts):
 * as a user route, except that API key headers that are not valid are 4012 (403), not 4010.
 */
export const mcpCredentialOutcomes: Record<CredentialKind, Outcome> = { ...credentialOutcomes.user, revoked_key: 4012 };

export const routeKey = (spec: Pick<RouteSpec, 'method' | 'path'>) => `${spec.method.toUpperCase()} ${spec.path}`;

/** Routes of the table without a row: a new route must say who may call it. */
export const routesWithoutRow = (routes: readonly Pick<RouteSpec, 'method' | 'path'>[]) => routes.map(routeKey).filter((key) => !(key in routeAccess));

/**
 * The JSON-RPC methods (POST /api/v1/rpc, which needs user credentials as `credentialOutcomes.user`
 * says; refusals come as JSON-RPC errors whose `data.code` is the code here). A send names the
 * counterparty's capability in a data part, as a purchase does.
 */
const buying: RouteAccess = { resource: 'self', parties: { owner: 'allow', other_user: 'allow', other_space: 4040 } };
const unsupported: RouteAccess = { resource: 'public', parties: { owner: 'allow', other_user: 'allow', other_space: 'allow' } };
const buyerCancels: RouteAccess = { resource: 'transaction', parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 } };
export const rpcMethodAccess: Record<string, RouteAccess> = {
  'tasks/send': buying,
  'tasks/sendSubscribe': buying,
  'message/send': buying,
  'message/stream': buying,
  SendMessage: buying,
  SendStreamingMessage: buying,
  'tasks/get': eitherParty,
  GetTask: eitherParty,
  'tasks/resubscribe': eitherParty,
  SubscribeToTask: eitherParty,
  'tasks/cancel': buyerCancels,
  CancelTask: buyerCancels,
  ListTasks: ownSpace,
  // Over HTTP these answer "unsupported" to every caller: nothing to refuse.
  'tasks/unsubscribe': unsupported,
  // A push config belongs to its maker, on a task the maker can see: either party of its transaction.
  'tasks/pushNotification/set': eitherParty,
  'tasks/pushNotification/get': eitherParty,
  'tasks/pushNotificationConfig/set': eitherParty,
  'tasks/pushNotificationConfig/get': eitherParty,
  'tasks/pushNotificationConfig/list': eitherParty,
  'tasks/pushNotificationConfig/delete': eitherParty,
  CreateTaskPushNotificationConfig: eitherParty,
  GetTaskPushNotificationConfig: eitherParty,
  ListTaskPushNotificationConfigs: eitherParty,
  ListTaskPushNotificationConfig: eitherParty,
  DeleteTaskPushNotificationConfig: eitherParty,
  'agent/getAuthenticatedExtendedCard': unsupported,
  GetExtendedAgentCard: unsupported,
};

/** The MCP tools (POST /mcp needs user credentials; a refused call is a tool error with this code). */
export const mcpToolAccess: Record<string, RouteAccess> = {
  get_capability: { resource: 'capability', parties: seenInSpace },
  buy_capability: buying,
  search_capabilities: ownSpace,
  match_capabilities: { resource: 'demand', parties: seenInSpace },
  create_demand: ownSpace,
  get_transaction: eitherParty,
  get_wallet: ownSpace,
  search_skills: ownSpace,
  get_skill: { resource: 'skill', parties: seenInSpace },
  create_skill: ownSpace,
  list_my_skills: ownSpace,
  update_skill: { resource: 'skill', parties: ownerOnly },
  delete_skill: { resource: 'skill', parties: ownerOnly },
  search_tasks: ownSpace,
  publish_task: ownSpace,
  apply_to_task: { resource: 'task', parties: { owner: 4030, counterparty: 'allow', other_user: 4030, other_space: 4040 } },
  list_task_applications: { resource: 'task', parties: { owner: 'allow', counterparty: 4030, other_user: 4030, other_space: 4040 } },
  accept_application: { resource: 'application', parties: { owner: 'allow', counterparty: 4030, other_user: 4040, other_space: 4040 } },
  accept_transaction: sellerMove,
  deliver_transaction: sellerMove,
  confirm_transaction: buyerMove,
};
