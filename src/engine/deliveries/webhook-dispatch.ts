import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { wantsKind } from '../../domain/webhooks.ts';
import { withTransaction } from '../../db/transaction.ts';
import { limits } from '../../limits.ts';
import type { EngineDependencies } from '../common/index.ts';
import { type Candidate, type FeedName, type Parties, type PartyRow, candidatesOf, partiesOf, partyColumns } from './webhook-candidates.ts';
import type { SubscriptionRow } from './webhook-rows.ts';
import { type PushDeliveryBody, pushOrderingKey, pushPartsOf } from './a2a-push.ts';
import { dispatchFeeds, dispatchLockClass, sweepUnheard } from './unheard-events.ts';

/**
 * The dispatcher (docs/webhooks.md "Delivery"): turns committed outbox rows, of transactions and of
 * tasks, into deliveries for the subscriptions that want them, and takes the rows off the
 * `undispatched_events` queue in the same database transaction. One instance dispatches at a time (a transaction-level advisory
 * lock; the others skip the turn), reading rows in id order, so the deliveries of one
 * transaction or task are made in the order its events were.
 */
/**
 * A subscription hears an event of its space, one of its kinds, within its filter when it has one,
 * and made after the subscription was (an event still waiting to be dispatched when it was made
 * happened before it).
 */
function hears(subscription: SubscriptionRow, candidate: Candidate, recipient: string, a2aTasks: Map<string, Set<string>>): boolean {
  if (subscription.owner_user_id !== recipient || !candidate.space(subscription.owner_type)) return false;
  if (candidate.createdAt < new Date(subscription.created_at)) return false;
  // An A2A push config hears the transaction of its task (the purchase itself, or a conversation's pick).
  if (subscription.kind === 'a2a_push')
    return candidate.source === 'transaction' && (a2aTasks.get(candidate.transactionId!)?.has(subscription.a2a_task_id!) ?? false);
  if (!wantsKind(subscription.event_types, candidate.type)) return false;
  if (subscription.transaction_id !== null && subscription.transaction_id !== candidate.transactionId) return false;
  return subscription.task_id === null || subscription.task_id === candidate.taskId;
}

const idsOf = (candidates: Parties[], field: 'transactionId' | 'taskId') => [
  ...new Set(candidates.flatMap((candidate) => (candidate[field] ? [candidate[field]] : []))),
];

/**
 * The webhooks of the batch's parties that can hear one of its events: those without a filter,
 * and those filtered on one of its transactions or tasks. Bounded by the webhook caps, and read
 * through an index of (owner, kind) that does not walk past the parties' push configs.
 */
function webhooksOf(trx: Knex, users: string[], candidates: Parties[]): Promise<SubscriptionRow[]> {
  const transactionIds = idsOf(candidates, 'transactionId');
  const taskIds = idsOf(candidates, 'taskId');
  return trx('webhook_subscriptions')
    .whereIn('owner_user_id', users)
    .where({ kind: 'webhook' })
    .whereNull('deleted_at')
    .where((filter) => {
      filter.where((unfiltered) => {
        unfiltered.whereNull('transaction_id').whereNull('task_id');
      });
      if (transactionIds.length > 0) filter.orWhereIn('transaction_id', transactionIds);
      if (taskIds.length > 0) filter.orWhereIn('task_id', taskIds);
    });
}

/**
 * The A2A push configs of the batch's transactions, found by their task (the index
 * webhook_subscriptions_a2a_config is led by a2a_task_id): a config is on the purchase itself, or
 * on the conversation whose pick bought it. Each row says which transaction it hears, so the
 * configs its owner has on other tasks are never read.
 */
async function pushConfigsOf(trx: Knex, users: string[], candidates: Parties[]): Promise<{ configs: SubscriptionRow[]; a2aTasks: Map<string, Set<string>> }> {
  const transactionIds = idsOf(
    candidates.filter((candidate) => candidate.source === 'transaction'),
    'transactionId',
  );
  const a2aTasks = new Map(transactionIds.map((id) => [id, new Set([id])]));
  if (transactionIds.length === 0) return { configs: [], a2aTasks };
  const rows = (await trx('webhook_subscriptions as s')
    .leftJoin('a2a_tasks as c', 'c.id', 's.a2a_task_id')
    .where('s.kind', 'a2a_push')
    .whereNull('s.deleted_at')
    .whereIn('s.owner_user_id', users)
    .where((task) => {
      task.whereIn('s.a2a_task_id', transactionIds).orWhereIn('c.transaction_id', transactionIds);
    })
    .select('s.*', trx.raw('coalesce(c.transaction_id, s.a2a_task_id) as heard_transaction_id'))) as (SubscriptionRow & { heard_transaction_id: string })[];
  for (const row of rows) a2aTasks.get(row.heard_transaction_id)?.add(row.a2a_task_id!);
  return { configs: rows.map(({ heard_transaction_id: _heard, ...config }) => config), a2aTasks };
}

/** The subscriptions that may hear one event for one recipient: the recipient's webhooks, and the configs of the event's tasks. */
function concerning(webhooks: SubscriptionRow[], configs: SubscriptionRow[], a2aTasks: Map<string, Set<string>>) {
  const groupBy = (rows: SubscriptionRow[], key: (row: SubscriptionRow) => string) => {
    const groups = new Map<string, SubscriptionRow[]>();
    for (const row of rows) groups.set(key(row), [...(groups.get(key(row)) ?? []), row]);
    return groups;
  };
  const byOwner = groupBy(webhooks, (subscription) => subscription.owner_user_id);
  const byTask = groupBy(configs, (config) => config.a2a_task_id!);
  return (candidate: Candidate, recipient: string): SubscriptionRow[] => [
    ...(byOwner.get(recipient) ?? []),
    ...(candidate.source === 'transaction' ? [...(a2aTasks.get(candidate.transactionId!) ?? [])].flatMap((task) => byTask.get(task) ?? []) : []),
  ];
}

/** The rows one subscription gets for one event: a webhook's body as it is, an A2A push's parts to render when sent. */
function bodiesFor(subscription: SubscriptionRow, candidate: Candidate): { part: number; body: unknown; orderingKey: string }[] {
  if (subscription.kind !== 'a2a_push') return [{ part: 0, body: candidate.body, orderingKey: candidate.orderingKey }];
  const view = (candidate.body.data as { data?: { transaction?: PushDeliveryBody['a2a']['view'] } }).data?.transaction ?? null;
  return pushPartsOf(subscription.a2a_generation!, view?.status ?? '').map((part, index) => ({
    part: index,
    body: { a2a: { part, view } } satisfies PushDeliveryBody,
    orderingKey: pushOrderingKey(subscription.a2a_task_id!),
  }));
}

async function queueLengths(trx: Knex, subscriptionIds: string[]): Promise<Map<string, number>> {
  if (subscriptionIds.length === 0) return new Map();
  const rows = (await trx('webhook_deliveries')
    .whereIn('subscription_id', subscriptionIds)
    .whereIn('status', ['pending', 'sending'])
    .groupBy('subscription_id')
    .select('subscription_id')
    .count('* as queued')) as { subscription_id: string; queued: string | number }[];
  return new Map(rows.map((row) => [row.subscription_id, Number(row.queued)]));
}

type Subscriptions = Awaited<ReturnType<typeof pushConfigsOf>> & { webhooks: SubscriptionRow[] };

/** The subscriptions that may hear one of a batch's events: its parties' webhooks, and the push configs of its transactions. */
async function subscriptionsFor(trx: Knex, parties: Parties[]): Promise<Subscriptions> {
  const users = [...new Set(parties.flatMap((party) => party.recipients))];
  const webhooks = await webhooksOf(trx, users, parties);
  return { webhooks, ...(await pushConfigsOf(trx, users, parties)) };
}

export function createWebhookDispatcher({ db, now }: EngineDependencies) {
  /** Deliveries for a batch of candidates and the subscriptions found for them; a subscription whose queue is full gets its new ones as failed (queue_full). */
  async function deliveriesFor(trx: Knex, candidates: Candidate[], { webhooks, configs, a2aTasks }: Subscriptions) {
    const queued = await queueLengths(
      trx,
      [...webhooks, ...configs].map((subscription) => subscription.id),
    );
    const subscriptionsOf = concerning(webhooks, configs, a2aTasks);
    const at = now();
    const deliveries = [];
    for (const candidate of candidates) {
      for (const recipient of new Set(candidate.recipients)) {
        for (const subscription of subscriptionsOf(candidate, recipient).filter((each) => hears(each, candidate, recipient, a2aTasks))) {
          for (const { part, body, orderingKey } of bodiesFor(subscription, candidate)) {
            const length = queued.get(subscription.id) ?? 0;
            const full = length >= limits.webhookPendingPerSubscriptionMax;
            if (!full) queued.set(subscription.id, length + 1);
            deliveries.push({
              id: randomUUID(),
              subscription_id: subscription.id,
              source: candidate.source,
              source_event_id: candidate.sourceEventId,
              part,
              ordering_key: orderingKey,
              event_type: candidate.type,
              body: JSON.stringify(body),
              status: full ? 'failed' : 'pending',
              next_attempt_at: at,
              created_at: at,
              last_error: full ? `queue_full: ${limits.webhookPendingPerSubscriptionMax} deliveries were already waiting for this subscription` : null,
              finished_at: full ? at : null,
            });
          }
        }
      }
    }
    return deliveries;
  }

  /** One batch of one feed: the number of outbox rows dispatched (0: nothing to do, or another instance's turn). */
  function dispatchBatch(feed: FeedName): Promise<number> {
    return withTransaction(db, async ({ trx }) => {
      const locked = await trx.raw('SELECT pg_try_advisory_xact_lock(?, ?) AS locked', [dispatchLockClass, dispatchFeeds[feed].lockKey]);
      if (!(locked.rows[0] as { locked: boolean }).locked) return 0;
      const { table } = dispatchFeeds[feed];
      const queued = (await trx('undispatched_events as queued')
        .join(`${table} as event`, 'event.id', 'queued.event_id')
        .where('queued.feed', table)
        .orderBy('queued.event_id')
        .limit(limits.webhookDispatchBatchSize)
        .select(trx.raw(partyColumns[feed]))) as PartyRow[];
      if (queued.length === 0) return 0;
      const ids = queued.map((row) => row.id);
      const subscriptions = await subscriptionsFor(trx, queued.map(partiesOf[feed]));
      // Most events have no subscription to hear them: their payloads are never read.
      if (subscriptions.webhooks.length + subscriptions.configs.length > 0) {
        const rows: unknown[] = await trx(table).whereIn('id', ids).orderBy('id');
        const deliveries = await deliveriesFor(trx, candidatesOf[feed](rows), subscriptions);
        for (let start = 0; start < deliveries.length; start += limits.webhookDispatchBatchSize) {
          await trx('webhook_deliveries').insert(deliveries.slice(start, start + limits.webhookDispatchBatchSize));
        }
      }
      await trx('undispatched_events').where('feed', table).whereIn('event_id', ids).del();
      return queued.length;
    });
  }

  /**
   * Dispatches everything committed so far, batch by batch, a bounded number of batches per run.
   * Each round first takes the events nobody hears off the queue in one statement (the common
   * case, unheard-events.ts); the full pass runs only for a feed with events a subscription may hear.
   */
  async function dispatch(): Promise<{ dispatched: number; backlog: boolean }> {
    let dispatched = 0;
    for (let round = 0; round < limits.retentionBatchesPerRunMax; round++) {
      const swept = await sweepUnheard(db);
      let more = false;
      for (const feed of Object.keys(dispatchFeeds) as FeedName[]) {
        dispatched += swept[feed].swept;
        more ||= swept[feed].full;
        if (!swept[feed].heard) continue;
        const count = await dispatchBatch(feed);
        dispatched += count;
        // A full batch: more of this feed is waiting.
        more ||= count === limits.webhookDispatchBatchSize;
      }
      if (!more) return { dispatched, backlog: false };
    }
    return { dispatched, backlog: true };
  }

  return { dispatch };
}
