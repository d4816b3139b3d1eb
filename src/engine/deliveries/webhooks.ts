import { randomUUID } from 'node:crypto';
import { newWebhookSecret } from '../../callbacks/webhook-signing.ts';
import { webhookPing } from '../../domain/webhooks.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { kickedRunner, periodic } from '../../periodic.ts';
import type { CreateWebhookInput } from '../../schemas/webhooks.ts';
import { authorize, manageWebhook } from '../access/index.ts';
import { outboundNetwork, type EngineDependencies, type Principal, newestFirstPage } from '../common/index.ts';
import { createWebhookDispatcher } from './webhook-dispatch.ts';
import { type AttemptRow, type DeliveryRow, deliveryView, type SubscriptionRow, subscriptionView } from './webhook-rows.ts';
import { createWebhookSender } from './webhook-sender.ts';
import { ensureRoom, lockCapScopes } from './subscription-caps.ts';
import type { A2AEngine } from '../a2a/index.ts';
import { createA2APush } from './a2a-push.ts';

/**
 * Webhooks (docs/webhooks.md): a user's subscriptions to kinds of events, and the worker that
 * delivers those events to them. A subscription is its owner's alone, in the space it was made
 * in (4040 for anyone else, as for every resource of another).
 */
export function createWebhooks(dependencies: EngineDependencies, a2a: A2AEngine) {
  const { db, now, log } = dependencies;
  // The same address guard as invoke's callbacks, and the same operator setting for private addresses.
  const network = outboundNetwork(dependencies);
  const dispatcher = createWebhookDispatcher(dependencies);
  // A2A push configs ride the same pipeline; what they POST is rendered by rpc/ when sent.
  const push = createA2APush(dependencies, a2a, () => kick());
  const sender = createWebhookSender(dependencies, network, {
    bodyOf: async (subscription, delivery) => (subscription.kind === 'a2a_push' ? push.bodyOf(subscription, delivery) : JSON.stringify(delivery.body)),
    headersOf: (subscription) => (subscription.kind === 'a2a_push' ? push.headersOf(subscription) : {}),
  });

  /**
   * One of the caller's live subscriptions. A2A push configs are read, listed and deleted here too
   * (their deliveries and failures are visible to their owner like a webhook's); a ping and a
   * secret rotation are for webhooks only (a push config's secret is never shown).
   */
  const findOwn = async (principal: Principal, id: string, kinds: readonly SubscriptionRow['kind'][] = ['webhook', 'a2a_push']) =>
    authorize(
      manageWebhook,
      principal,
      (await db('webhook_subscriptions').where({ id }).whereIn('kind', kinds).whereNull('deleted_at').first()) as SubscriptionRow | undefined,
      'webhook',
    );

  async function create(principal: Principal, input: CreateWebhookInput) {
    return withTransaction(db, async ({ trx }) => {
      // The owner's and its API key's subscriptions are counted under locks, so parallel creates cannot pass a cap.
      await lockCapScopes(trx, principal);
      await ensureRoom(trx, principal, 'webhook', now());
      const row = {
        id: randomUUID(),
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        url: input.url,
        event_types: input.event_types,
        transaction_id: input.transaction_id ?? null,
        task_id: input.task_id ?? null,
        description: input.description ?? null,
        secret: newWebhookSecret(),
        created_at: now(),
        api_key_id: principal.api_key_id,
      };
      const [inserted] = (await trx('webhook_subscriptions').insert(row).returning('*')) as SubscriptionRow[];
      return { ...subscriptionView(inserted!), secret: inserted!.secret };
    });
  }

  function list(principal: Principal, query: { kind: SubscriptionRow['kind']; page: number; page_size: number; cursor?: string }) {
    const filtered = () =>
      db('webhook_subscriptions').where({ kind: query.kind, owner_user_id: principal.user_id, owner_type: principal.caller_type }).whereNull('deleted_at');
    return newestFirstPage<SubscriptionRow>(filtered, query).then((page) => ({ ...page, items: page.items.map(subscriptionView) }));
  }

  async function get(principal: Principal, id: string) {
    const row = await findOwn(principal, id);
    const counts = (await db('webhook_deliveries').where({ subscription_id: id }).groupBy('status').select('status').count('* as count')) as {
      status: string;
      count: string | number;
    }[];
    const count = (...statuses: string[]) => counts.filter((each) => statuses.includes(each.status)).reduce((sum, each) => sum + Number(each.count), 0);
    return { ...subscriptionView(row), deliveries: { pending: count('pending', 'sending'), delivered: count('delivered'), failed: count('failed') } };
  }

  /** Deleting stops deliveries: the waiting ones fail when their turn comes ("the subscription was deleted"). */
  async function remove(principal: Principal, id: string) {
    await findOwn(principal, id);
    await db('webhook_subscriptions').where({ id }).whereNull('deleted_at').update({ deleted_at: now() });
    return { id, deleted: true };
  }

  /** A new secret, shown once; the old one keeps signing beside it for webhookPreviousSecretValidMs, so receivers can switch without losing a delivery. */
  async function rotateSecret(principal: Principal, id: string) {
    const row = await findOwn(principal, id, ['webhook']);
    const secret = newWebhookSecret();
    const [rotated] = (await db('webhook_subscriptions')
      .where({ id, secret: row.secret })
      .update({
        secret,
        previous_secret: row.secret,
        previous_secret_expires_at: new Date(now().getTime() + limits.webhookPreviousSecretValidMs),
      })
      .returning('*')) as SubscriptionRow[];
    if (!rotated) throw new AppError('conflict', 'the secret was rotated by another request at the same moment: read the webhook and rotate again if needed');
    return { ...subscriptionView(rotated), secret };
  }

  /** A `webhook.ping` delivery, sent like any other, so an owner can check the receiver and its signature check. */
  async function ping(principal: Principal, id: string) {
    await findOwn(principal, id, ['webhook']);
    const at = now();
    const deliveryId = randomUUID();
    const body = { type: webhookPing, timestamp: at.toISOString(), data: { webhook_id: id } };
    await db('webhook_deliveries').insert({
      id: deliveryId,
      subscription_id: id,
      source: 'ping',
      source_event_id: 0,
      ordering_key: `ping:${deliveryId}`,
      event_type: webhookPing,
      body: JSON.stringify(body),
      status: 'pending',
      next_attempt_at: at,
      created_at: at,
    });
    kick();
    return { delivery_id: deliveryId, event_type: webhookPing, status: 'pending' };
  }

  async function deliveries(principal: Principal, id: string, query: { page: number; page_size: number; cursor?: string; status?: string }) {
    await findOwn(principal, id);
    const filtered = () => {
      const rows = db('webhook_deliveries').where({ subscription_id: id });
      if (query.status === 'pending') return rows.whereIn('status', ['pending', 'sending']);
      return query.status ? rows.where({ status: query.status }) : rows;
    };
    const page = await newestFirstPage<DeliveryRow>(filtered, query);
    const attempts = (await db('webhook_attempts')
      .whereIn(
        'delivery_id',
        page.items.map((item) => item.id),
      )
      .orderBy('number')) as AttemptRow[];
    return {
      ...page,
      items: page.items.map((item) =>
        deliveryView(
          item,
          attempts.filter((each) => each.delivery_id === item.id),
        ),
      ),
    };
  }

  /**
   * One pass: dispatch what was committed, start the sends that are due; true when another pass
   * should follow at once. A dispatch that caught up with the commits (no feed left with a full
   * run's budget of batches) lingers: rather than a pass (a database transaction and its commit)
   * for every few events that commit meanwhile, the passes of the next webhookDispatchLingerMs only
   * send, and the one after takes every event committed meanwhile
   * (docs/decisions/streams-and-deliveries.md "What is still owed, in queues of its own").
   * `drain` (runOnce) dispatches whatever the linger.
   */
  async function pass(drain = false): Promise<boolean> {
    const { dispatched, backlog } = lingering === null || drain ? await dispatcher.dispatch() : { dispatched: 0, backlog: false };
    const started = await sender.sendDue(kick);
    if (dispatched > 0 && !backlog) kickSoon();
    return backlog || started > 0;
  }
  let lingering: NodeJS.Timeout | null = null;
  let lingerMs: number = limits.webhookDispatchLingerMs;
  function kickSoon() {
    if (lingering) return;
    lingering = setTimeout(() => {
      lingering = null;
      kick();
    }, lingerMs);
    lingering.unref();
  }
  const worker = kickedRunner('webhooks', pass, log);
  const schedule = periodic('webhooks', async () => worker.kick(), log);
  // Work is kicked (after a send, a ping) only while the worker runs: an app whose background jobs
  // are not started (a test's, a command's) sends nothing by itself, and stops without waiting on
  // a receiver; runOnce drives it there.
  let running = false;
  const kick = () => {
    if (running) worker.kick();
  };

  /**
   * Whether anything could be dispatched or sent now: undispatched events, or deliveries due (their
   * lease, if any, run out) that the claim would take. A delivery behind an earlier one of its
   * ordering key still pending (waiting for its retry) is not: the claim's own rule
   * (webhook-claim.ts), or runOnce would spin its every round while the earlier one waits.
   */
  async function anythingDue(): Promise<boolean> {
    const at = now();
    const result = await db.raw(
      `SELECT EXISTS (SELECT 1 FROM undispatched_events)
           OR EXISTS (SELECT 1 FROM webhook_deliveries AS due WHERE ((due.status = 'pending' AND due.next_attempt_at <= ?) OR (due.status = 'sending' AND due.lease_until <= ?))
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries AS earlier
                                 WHERE earlier.subscription_id = due.subscription_id AND earlier.ordering_key = due.ordering_key
                                   AND earlier.status IN ('pending', 'sending') AND (earlier.source_event_id, earlier.part) < (due.source_event_id, due.part))) AS due`,
      [at, at],
    );
    return (result.rows[0] as { due: boolean }).due;
  }

  /**
   * For tests and tools: passes until nothing is due and nothing is in flight here, every send
   * recorded. Asked of the database, not of the passes' answers: a send that settles kicks a pass
   * of its own, which may be the one that starts the next send.
   */
  async function runOnce() {
    for (let round = 0; round < limits.webhookRunOnceRoundsMax; round++) {
      await pass(true);
      await worker.idle();
      await sender.settled();
      if (sender.inFlight === 0 && !(await anythingDue())) return;
    }
  }

  /** A2A push configs; a send that registers one waits (bounded) for its first push while the worker runs. */
  const a2aPush = { ...push, awaitFirstAttempt: (deliveryId: string) => push.awaitFirstAttempt(deliveryId, limits.a2aPushFirstAttemptWaitMs, running) };

  return {
    create,
    list,
    get,
    remove,
    rotateSecret,
    ping,
    deliveries,
    runOnce,
    kick,
    a2aPush,
    start: (intervalMs: number = limits.webhookPollIntervalMs, dispatchLingerMs: number = limits.webhookDispatchLingerMs) => {
      running = true;
      lingerMs = dispatchLingerMs;
      schedule.start(intervalMs);
    },
    stop: () => {
      running = false;
      schedule.stop();
      if (lingering) clearTimeout(lingering);
      lingering = null;
    },
    idle: async () => {
      await schedule.idle();
      await worker.idle();
      await sender.settled();
    },
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;
