import type { Knex } from 'knex';
import { terminalStatuses } from '../../domain/escrow.ts';
import type { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type Principal, capReached as refused, lockAccount } from '../common/index.ts';
import type { SubscriptionRow } from './webhook-rows.ts';

/**
 * How many live subscriptions one user, and all the users of one API key together, may keep
 * (issue 28 point 5, docs/webhooks.md "Bounds"): webhooks and A2A push configs each have a cap
 * per user and space and a cap per API key. A create counts under locks on the key's row and the
 * user's row, taken in that order on every path, so parallel creates cannot pass a cap together
 * and two creates never wait on each other crosswise.
 */
type Kind = SubscriptionRow['kind'];

interface Cap {
  max: number;
  /** The refusal's message and data when the cap is reached. */
  refusal: () => AppError;
}

const caps: Record<Kind, { user: Cap; apiKey: Cap }> = {
  webhook: {
    user: {
      max: limits.webhookSubscriptionsPerUserMax,
      refusal: () =>
        refused(`you have ${limits.webhookSubscriptionsPerUserMax} webhooks in this space, the most there can be: delete one first`, {
          webhooks_max: limits.webhookSubscriptionsPerUserMax,
        }),
    },
    apiKey: {
      max: limits.webhookSubscriptionsPerApiKeyMax,
      refusal: () =>
        refused(`the users of this API key have ${limits.webhookSubscriptionsPerApiKeyMax} webhooks together, the most there can be: delete one first`, {
          webhooks_per_api_key_max: limits.webhookSubscriptionsPerApiKeyMax,
        }),
    },
  },
  a2a_push: {
    user: {
      max: limits.a2aPushConfigsPerUserMax,
      refusal: () =>
        refused(
          `you have ${limits.a2aPushConfigsPerUserMax} push notification configs in this space on tasks still running, the most there can be: delete one first`,
          { configs_per_user_max: limits.a2aPushConfigsPerUserMax },
        ),
    },
    apiKey: {
      max: limits.a2aPushConfigsPerApiKeyMax,
      refusal: () =>
        refused(
          `the users of this API key have ${limits.a2aPushConfigsPerApiKeyMax} push notification configs together on tasks still running, the most there can be: delete one first`,
          { configs_per_api_key_max: limits.a2aPushConfigsPerApiKeyMax },
        ),
    },
  },
};

type Scope = (query: Knex.QueryBuilder) => Knex.QueryBuilder;
const scopesOf = (principal: Principal): { cap: 'user' | 'apiKey'; where: Scope }[] => [
  ...(principal.api_key_id ? [{ cap: 'apiKey' as const, where: (query: Knex.QueryBuilder) => query.where('s.api_key_id', principal.api_key_id) }] : []),
  { cap: 'user', where: (query) => query.where({ 's.owner_user_id': principal.user_id, 's.owner_type': principal.caller_type }) },
];

async function countLive(trx: Knex, kind: Kind, scope: Scope): Promise<number> {
  const [counted] = (await scope(trx('webhook_subscriptions as s').where('s.kind', kind).whereNull('s.deleted_at')).count('* as count')) as {
    count: string | number;
  }[];
  return Number(counted?.count ?? 0);
}

/**
 * Retires the scope's oldest push config whose task is over (its transaction in a final state)
 * and which has nothing left to send (no delivery waiting, no move of the transaction still to
 * dispatch): it would never push again, so it gives its place to a new one. True when one was
 * retired. Reads at most the scope's live configs, and only when a cap is reached.
 */
async function retireFinishedConfig(trx: Knex, scope: Scope, at: Date): Promise<boolean> {
  const finished = scope(
    trx('webhook_subscriptions as s')
      .leftJoin('a2a_tasks as c', 'c.id', 's.a2a_task_id')
      .join('transactions as t', 't.id', trx.raw('coalesce(c.transaction_id, s.a2a_task_id)'))
      .where('s.kind', 'a2a_push')
      .whereNull('s.deleted_at')
      .whereIn('t.status', [...terminalStatuses])
      .whereNotExists((waiting) => {
        waiting.select(trx.raw('1')).from('webhook_deliveries as d').whereRaw('d.subscription_id = s.id').whereIn('d.status', ['pending', 'sending']);
      })
      // A move not yet dispatched is a push still to make: its config is not done either.
      .whereNotExists((moving) => {
        moving
          .select(trx.raw('1'))
          .from('outbox_events as o')
          .join('undispatched_events as queued', 'queued.event_id', 'o.id')
          .where('queued.feed', 'outbox_events')
          .whereRaw('o.transaction_id = t.id');
      }),
  )
    .orderBy([{ column: 's.created_at' }, { column: 's.id' }])
    .select('s.id')
    .limit(1);
  const retired = await trx('webhook_subscriptions').where('id', finished).whereNull('deleted_at').update({ deleted_at: at });
  return retired > 0;
}

/** The cap locks: the API key's row, then the user's, on every path (see above). */
export async function lockCapScopes(trx: Knex, principal: Principal): Promise<void> {
  if (principal.api_key_id) await trx('api_keys').where({ id: principal.api_key_id }).forNoKeyUpdate().first('id');
  await lockAccount(trx, principal.user_id);
}

/**
 * Refuses (4092) a new subscription of `kind` that would pass the caller's cap or its API key's;
 * a push config at a cap first retires a finished one. Called under lockCapScopes.
 */
export async function ensureRoom(trx: Knex, principal: Principal, kind: Kind, at: Date): Promise<void> {
  for (const { cap, where } of scopesOf(principal)) {
    if ((await countLive(trx, kind, where)) < caps[kind][cap].max) continue;
    if (kind === 'a2a_push' && (await retireFinishedConfig(trx, where, at))) continue;
    throw caps[kind][cap].refusal();
  }
}
