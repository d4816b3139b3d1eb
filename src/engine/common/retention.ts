import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import { periodic } from '../../periodic.ts';
import type { EngineDependencies } from './dependencies.ts';

const hourMs = 60 * 60 * 1000;

/**
 * Keeps the tables that grow with traffic bounded (docs/decisions/limits-and-storage.md, "Retention"): published outbox
 * rows and task events older than OUTBOX_RETENTION_HOURS, and idempotency keys past their expiry. Each batch is
 * one short DELETE of at most `batchSize` rows chosen with SKIP LOCKED, so several instances can
 * run the job at once without waiting on each other or on the rows a change is writing, and no
 * statement holds locks for long. An outbox row still queued is never deleted: the relay still
 * owes it to the bus, or the dispatcher to the webhooks. Expired device authorization requests go the same way.
 */
export function createRetention({ db, config, now, log }: EngineDependencies, batchSize: number = limits.retentionBatchSize) {
  /** Deletes in batches until a batch comes back short, or the run's batch budget is spent. */
  async function inBatches(deleteBatch: () => Promise<number>): Promise<number> {
    let deleted = 0;
    for (let batch = 0; batch < limits.retentionBatchesPerRunMax; batch++) {
      const count = await deleteBatch();
      deleted += count;
      if (count < batchSize) break;
    }
    return deleted;
  }

  const victims = (table: string, key: string, filter: (query: Knex.QueryBuilder) => Knex.QueryBuilder) =>
    filter(db(table).select(key)).limit(batchSize).forUpdate().skipLocked();

  /** Event rows no queue holds any more: published (where they are published) and dispatched (db/migrations/072_event_queues.ts). */
  const owedNothing = (query: Knex.QueryBuilder, table: string, queues: string[]) =>
    queues.reduce(
      (rows, queue) =>
        rows.whereNotExists((owed) => {
          owed.select(db.raw('1')).from(queue).where(`${queue}.feed`, table).whereRaw(`${queue}.event_id = ${table}.id`);
        }),
      query,
    );

  /** The transactions' outbox and the task events (docs/tasks.md "Task events") keep the same window. */
  function pruneOutbox(table: 'outbox_events' | 'task_events'): Promise<number> {
    const cutoff = new Date(now().getTime() - config.OUTBOX_RETENTION_HOURS * hourMs);
    return inBatches(() =>
      db(table)
        .whereIn(
          'id',
          victims(table, 'id', (query) => owedNothing(query.where('created_at', '<', cutoff), table, ['unpublished_events', 'undispatched_events'])),
        )
        .del(),
    );
  }

  /** Demand matches are kept as long as the other events, once the dispatcher has read them. */
  function pruneDemandEvents(): Promise<number> {
    const cutoff = new Date(now().getTime() - config.OUTBOX_RETENTION_HOURS * hourMs);
    return inBatches(() =>
      db('demand_events')
        .whereIn(
          'id',
          victims('demand_events', 'id', (query) => owedNothing(query.where('created_at', '<', cutoff), 'demand_events', ['undispatched_events'])),
        )
        .del(),
    );
  }

  /**
   * MCP sign-in's rows once they can no longer be used: sign-in requests (and their codes) a day
   * past their expiry, tokens past theirs (a used refresh token is kept until then, so that a replay
   * is still recognised), and clients with neither requests nor tokens left once they have been
   * idle for oauthIdleClientRetentionMs (a metadata document's client is fetched again if it comes back).
   */
  async function pruneOAuth(): Promise<number> {
    const at = now();
    const dayAgo = new Date(at.getTime() - 24 * hourMs);
    const requests = await inBatches(() =>
      db('oauth_requests')
        .whereIn(
          'id',
          victims('oauth_requests', 'id', (query) => query.where('expires_at', '<', dayAgo)),
        )
        .del(),
    );
    const tokens = await inBatches(() =>
      db('oauth_tokens')
        .whereIn(
          'token_hash',
          victims('oauth_tokens', 'token_hash', (query) => query.where('expires_at', '<', at)),
        )
        .del(),
    );
    const idleSince = new Date(at.getTime() - limits.oauthIdleClientRetentionMs);
    const idle = (query: Knex.QueryBuilder) =>
      query
        .where('created_at', '<', idleSince)
        .whereNotExists(db('oauth_requests').select(db.raw('1')).whereRaw('oauth_requests.client_id = oauth_clients.client_id'))
        .whereNotExists(db('oauth_tokens').select(db.raw('1')).whereRaw('oauth_tokens.client_id = oauth_clients.client_id'));
    const clients = await inBatches(() =>
      db('oauth_clients')
        .whereIn('client_id', victims('oauth_clients', 'client_id', idle))
        .del(),
    );
    return requests + tokens + clients;
  }

  function deleteExpiredKeys(): Promise<number> {
    const at = now();
    return inBatches(() =>
      db('idempotency_keys')
        .whereIn(
          'scope_hash',
          victims('idempotency_keys', 'scope_hash', (query) => query.where('expires_at', '<=', at)),
        )
        .del(),
    );
  }

  /** A device request is dead once expired; it is kept a day longer so a late poll still hears 4803. */
  function deleteExpiredDeviceAuthorizations(): Promise<number> {
    const cutoff = new Date(now().getTime() - limits.deviceAuthorizationRetentionMs);
    return inBatches(() =>
      db('device_authorizations')
        .whereIn(
          'id',
          victims('device_authorizations', 'id', (query) => query.where('expires_at', '<', cutoff)),
        )
        .del(),
    );
  }

  /**
   * A2A history follows the events' retention: stored messages older than the window go (a task's
   * states stay, derived from its transaction), and so does a conversation that never bought
   * anything once its last change is older and its messages are gone. A conversation that bought
   * keeps its row: it is the name its transaction's task answers to.
   */
  function pruneA2AHistory(): Promise<number> {
    const cutoff = new Date(now().getTime() - config.OUTBOX_RETENTION_HOURS * hourMs);
    return inBatches(() =>
      db('a2a_messages')
        .whereIn(
          'sequence',
          victims('a2a_messages', 'sequence', (query) => query.where('created_at', '<', cutoff)),
        )
        .del(),
    );
  }

  function pruneUnboughtConversations(): Promise<number> {
    const cutoff = new Date(now().getTime() - config.OUTBOX_RETENTION_HOURS * hourMs);
    const unbought = (query: Knex.QueryBuilder) =>
      query
        .where({ kind: 'conversation' })
        .whereNull('transaction_id')
        .where('updated_at', '<', cutoff)
        .whereNotExists(db('a2a_messages').select(db.raw('1')).whereRaw('a2a_messages.task_id = a2a_tasks.id'));
    return inBatches(() =>
      db('a2a_tasks')
        .whereIn('id', victims('a2a_tasks', 'id', unbought))
        .del(),
    );
  }

  /** Finished webhook deliveries, with their attempts (cascade), once their owner has had a week to read them. */
  function pruneWebhookDeliveries(): Promise<number> {
    const cutoff = new Date(now().getTime() - limits.webhookDeliveryRetentionMs);
    return inBatches(() =>
      db('webhook_deliveries')
        .whereIn(
          'id',
          victims('webhook_deliveries', 'id', (query) => query.whereNotNull('finished_at').where('finished_at', '<', cutoff)),
        )
        .del(),
    );
  }

  /**
   * Subscriptions that are over: deleted ones once their deliveries' retention has passed too, and
   * A2A push configs a2aPushConfigRetentionMs after they were made (a task's life is days; an
   * agent that still wants pushes sets its config again). Their deliveries go with them (cascade).
   */
  function pruneWebhookSubscriptions(): Promise<number> {
    const deletedBefore = new Date(now().getTime() - limits.webhookDeliveryRetentionMs);
    const madeBefore = new Date(now().getTime() - limits.a2aPushConfigRetentionMs);
    const over = (query: Knex.QueryBuilder) =>
      query.where((either) => {
        either.where('deleted_at', '<', deletedBefore).orWhere((push) => {
          push.where({ kind: 'a2a_push' }).where('created_at', '<', madeBefore);
        });
      });
    return inBatches(() =>
      db('webhook_subscriptions')
        .whereIn('id', victims('webhook_subscriptions', 'id', over))
        .del(),
    );
  }

  async function runOnce(): Promise<{
    outboxEvents: number;
    taskEvents: number;
    webhookDeliveries: number;
    webhookSubscriptions: number;
    demandEvents: number;
    oauth: number;
    idempotencyKeys: number;
    deviceAuthorizations: number;
    a2aMessages: number;
    conversations: number;
  }> {
    const outboxEvents = await pruneOutbox('outbox_events');
    const taskEvents = await pruneOutbox('task_events');
    const webhookDeliveries = await pruneWebhookDeliveries();
    const webhookSubscriptions = await pruneWebhookSubscriptions();
    const demandEvents = await pruneDemandEvents();
    const oauth = await pruneOAuth();
    const idempotencyKeys = await deleteExpiredKeys();
    const deviceAuthorizations = await deleteExpiredDeviceAuthorizations();
    const a2aMessages = await pruneA2AHistory();
    const conversations = await pruneUnboughtConversations();
    if (
      outboxEvents +
        taskEvents +
        webhookDeliveries +
        webhookSubscriptions +
        demandEvents +
        oauth +
        idempotencyKeys +
        deviceAuthorizations +
        a2aMessages +
        conversations >
      0
    ) {
      log.info('retention deleted old rows', {
        outbox_events: outboxEvents,
        task_events: taskEvents,
        webhook_deliveries: webhookDeliveries,
        webhook_subscriptions: webhookSubscriptions,
        demand_events: demandEvents,
        oauth,
        idempotency_keys: idempotencyKeys,
        device_authorizations: deviceAuthorizations,
        a2a_messages: a2aMessages,
        conversations,
      });
    }
    return {
      outboxEvents,
      taskEvents,
      webhookDeliveries,
      webhookSubscriptions,
      demandEvents,
      oauth,
      idempotencyKeys,
      deviceAuthorizations,
      a2aMessages,
      conversations,
    };
  }

  const schedule = periodic('retention', runOnce, log);
  return { runOnce, start: (intervalMs: number = limits.retentionIntervalMs) => schedule.start(intervalMs), stop: schedule.stop, idle: schedule.idle };
}

export type Retention = ReturnType<typeof createRetention>;
