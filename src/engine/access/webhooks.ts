import type { Rule } from './rules.ts';

/**
 * Who may see and change a webhook (docs/webhooks.md): its owner, in the space it was made in.
 * Anyone else, and the owner's other credentials of the other space, get 4040: a subscription
 * names where its owner's events go, which is nobody else's business.
 */
type WebhookParty = { owner_user_id: string; owner_type: string };

export const manageWebhook: readonly Rule<WebhookParty>[] = [
  { says: "the webhook is the caller's own", holds: (caller, row) => row.owner_user_id === caller.user_id, otherwise: 'not_found' },
  { says: "the webhook is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
];
