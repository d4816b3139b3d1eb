import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { newWebhookSecret } from '../../callbacks/webhook-signing.ts';
import { isSendableHeaderValue, unsendableHeaderMessage } from '../../domain/webhooks.ts';
import { withTransaction } from '../../db/transaction.ts';
import { AppError, notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { TransactionEventView, TransactionView } from '../../schemas/transactions.ts';
import type { A2AEngine, A2ATask } from '../a2a/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { ensureRoom, lockCapScopes } from './subscription-caps.ts';
import type { DeliveryRow, SubscriptionRow } from './webhook-rows.ts';

/**
 * A2A push notification configs (docs/webhooks.md "A2A push notifications"): subscriptions of the
 * webhook pipeline that belong to one A2A task and speak one A2A generation. The rules of who sees
 * a config are the task's: a caller reaches only the configs it made, on a task it can see
 * (anything else is the task's 4040, -32001 over JSON-RPC).
 *
 * What a push says is decided when it is sent, not when it is queued: the delivery keeps the
 * transaction as the event showed it, and rpc/ renders it in the config's generation (the
 * renderer is registered by rpc/, which owns the A2A shapes). Sending renders outside any
 * database transaction, so reading the task there needs no second connection.
 */
export type PushGeneration = 'v0.1' | 'v0.3' | 'v1.0';

/** What one POST carries: the task, a status update, or the delivered artifact (v1.0 sends those apart). */
export type PushPart = 'task' | 'status' | 'artifact';

/** The stored body of an A2A push delivery: which part, of which state of the transaction (null: the task as it is when sent). */
export interface PushDeliveryBody {
  a2a: { part: PushPart; view: TransactionEventView | TransactionView | null };
}

export type PushRenderer = (task: A2ATask, generation: PushGeneration, taskName: string, view: TransactionView | null, part: PushPart) => unknown;

export interface PushConfigInput {
  /** The task as the caller names it (a conversation's or transaction's id, or a v0.1 client id). */
  taskName: string;
  generation: PushGeneration;
  configId: string;
  url: string;
  token: string | null;
  scheme: string | null;
  credentials: string | null;
}

export interface PushConfig {
  configId: string;
  taskName: string;
  url: string;
  token: string | null;
  scheme: string | null;
  hasCredentials: boolean;
  generation: PushGeneration;
  createdAt: string;
}

export const pushConfigView = (row: SubscriptionRow): PushConfig => ({
  configId: row.a2a_config_id!,
  taskName: row.a2a_task_name!,
  url: row.url,
  token: row.a2a_token,
  scheme: row.a2a_auth_scheme,
  hasCredentials: row.a2a_auth_credentials !== null,
  generation: row.a2a_generation!,
  createdAt: new Date(row.created_at).toISOString(),
});

/** The parts one transaction event makes for a config: v1.0 sends a delivered result as its own artifact update first. */
export const pushPartsOf = (generation: PushGeneration, status: string): PushPart[] =>
  generation !== 'v1.0' ? ['task'] : status === 'delivered' ? ['artifact', 'status'] : ['status'];

/** Every delivery of one config shares its ordering key: they go out one at a time, snapshot first. */
export const pushOrderingKey = (taskId: string) => `a2a:${taskId}`;

const ownerOf = (row: SubscriptionRow): Principal => ({ user_id: row.owner_user_id, caller_type: row.owner_type, platform: null, api_key_id: null });

/** An event leaves large fields out; they never change once set, so the task's current transaction fills them in. */
function completed(view: TransactionEventView | TransactionView | null, current: TransactionView | null): TransactionView | null {
  if (view === null) return current;
  const omitted = (view as TransactionEventView).omitted_fields ?? [];
  const { omitted_fields: _omitted, ...rest } = view as TransactionEventView;
  return { ...rest, ...Object.fromEntries(omitted.map(({ field }) => [field, current?.[field] ?? null])) };
}

/** The rule for every path that sets a config (rpc/push-params.ts says it first, per field): its headers must be sendable. */
function refuseUnsendableHeaders(input: PushConfigInput) {
  const unsendable = (['token', 'scheme', 'credentials'] as const).filter((field) => input[field] !== null && !isSendableHeaderValue(input[field]));
  if (unsendable.length > 0)
    throw new AppError('validation_error', 'request failed validation', {
      errors: unsendable.map((field) => ({ path: `params.${field}`, message: unsendableHeaderMessage })),
    });
}

export function createA2APush(dependencies: EngineDependencies, a2a: A2AEngine, kick: () => void) {
  const { db, now } = dependencies;
  let renderer: PushRenderer | null = null;

  const live = (knex: Knex, principal: Principal, taskId: string) =>
    knex('webhook_subscriptions')
      .where({ kind: 'a2a_push', a2a_task_id: taskId, owner_user_id: principal.user_id, owner_type: principal.caller_type })
      .whereNull('deleted_at');

  /**
   * Stores a config (the same id on the same task replaces the old one, as the SDKs do) and, with
   * `snapshot`, queues the task as it is now as the config's first push: a client that registers
   * inside its send hears of the task it just made.
   */
  async function set(principal: Principal, input: PushConfigInput, options: { snapshot: boolean }): Promise<{ config: PushConfig; snapshotId: string | null }> {
    refuseUnsendableHeaders(input);
    const task = await a2a.find(principal, input.taskName);
    const outcome = await withTransaction(db, async ({ trx }) => {
      // The owner's and its API key's rows are locked so that parallel sets cannot pass a limit together.
      await lockCapScopes(trx, principal);
      await live(trx, principal, task.id).where({ a2a_config_id: input.configId }).update({ deleted_at: now() });
      const [counted] = (await live(trx, principal, task.id).count('* as count')) as { count: string | number }[];
      if (Number(counted?.count ?? 0) >= limits.a2aPushConfigsPerTaskMax) {
        throw new AppError('conflict', `this task has ${limits.a2aPushConfigsPerTaskMax} push notification configs, the most there can be: delete one first`, {
          configs_max: limits.a2aPushConfigsPerTaskMax,
        });
      }
      const at = now();
      await ensureRoom(trx, principal, 'a2a_push', at);
      const row = {
        id: randomUUID(),
        kind: 'a2a_push',
        owner_user_id: principal.user_id,
        owner_type: principal.caller_type,
        url: input.url,
        event_types: ['transaction.*'],
        transaction_id: null,
        task_id: null,
        description: null,
        secret: newWebhookSecret(),
        created_at: at,
        a2a_generation: input.generation,
        a2a_task_id: task.id,
        a2a_task_name: input.taskName,
        a2a_config_id: input.configId,
        a2a_token: input.token,
        a2a_auth_scheme: input.scheme,
        a2a_auth_credentials: input.credentials,
        api_key_id: principal.api_key_id,
      };
      const [inserted] = (await trx('webhook_subscriptions').insert(row).returning('*')) as SubscriptionRow[];
      const snapshotId = options.snapshot ? await queueSnapshot(trx, inserted!, task, at) : null;
      return { config: pushConfigView(inserted!), snapshotId };
    });
    if (outcome.snapshotId) kick();
    return outcome;
  }

  /**
   * Refuses (4092) when the caller could not set one more config now: a send with an inline config
   * asks before it buys, so that a caller at a cap is not answered an error after its purchase.
   */
  async function ensureRoomForOne(principal: Principal): Promise<void> {
    await withTransaction(db, async ({ trx }) => {
      await lockCapScopes(trx, principal);
      await ensureRoom(trx, principal, 'a2a_push', now());
    });
  }

  async function queueSnapshot(trx: Knex, subscription: SubscriptionRow, task: A2ATask, at: Date): Promise<string> {
    const id = randomUUID();
    const body: PushDeliveryBody = { a2a: { part: 'task', view: task.transaction } };
    await trx('webhook_deliveries').insert({
      id,
      subscription_id: subscription.id,
      source: 'snapshot',
      source_event_id: 0,
      part: 0,
      ordering_key: pushOrderingKey(task.id),
      event_type: 'a2a.task',
      body: JSON.stringify(body),
      status: 'pending',
      next_attempt_at: at,
      created_at: at,
    });
    return id;
  }

  /**
   * One config of the task; without an id (or, with `lenient`, an id it does not have) its first,
   * as the v0.2/v0.3 reference servers answer. None: 4040, which JSON-RPC answers -32001.
   */
  async function get(principal: Principal, taskName: string, configId: string | null, lenient: boolean): Promise<PushConfig> {
    const task = await a2a.find(principal, taskName);
    const rows = (await live(db, principal, task.id).orderBy([{ column: 'created_at' }, { column: 'id' }])) as SubscriptionRow[];
    const exact = configId === null ? undefined : rows.find((row) => row.a2a_config_id === configId);
    const chosen = exact ?? (configId === null || lenient ? rows[0] : undefined);
    if (!chosen) throw notFound('push notification config');
    return pushConfigView(chosen);
  }

  /** The task's configs, oldest first (at most a2aPushConfigsPerTaskMax, so one page holds them all). */
  async function list(principal: Principal, taskName: string): Promise<PushConfig[]> {
    const task = await a2a.find(principal, taskName);
    return ((await live(db, principal, task.id).orderBy([{ column: 'created_at' }, { column: 'id' }])) as SubscriptionRow[]).map(pushConfigView);
  }

  /** Deleting is idempotent (v1.0 says so): an id the task does not have is already gone. Its waiting pushes fail unsent. */
  async function remove(principal: Principal, taskName: string, configId: string): Promise<void> {
    const task = await a2a.find(principal, taskName);
    await live(db, principal, task.id).where({ a2a_config_id: configId }).update({ deleted_at: now() });
  }

  /**
   * Waits, at most `waitMs`, until a queued push has been answered or has failed once: an inline
   * registration answers after its first push has gone, so the client's receiver has it before
   * the client reads the answer (as the conformance kit checks). Only while the worker runs.
   */
  async function awaitFirstAttempt(deliveryId: string, waitMs: number, running: boolean) {
    if (!running) return;
    const deadline = Date.now() + waitMs;
    while (Date.now() < deadline) {
      const row = (await db('webhook_deliveries').where({ id: deliveryId }).first('status', 'attempts')) as
        Pick<DeliveryRow, 'status' | 'attempts'> | undefined;
      if (!row || row.status === 'delivered' || row.status === 'failed' || (row.status === 'pending' && row.attempts > 0)) return;
      await new Promise((resolve) => setTimeout(resolve, limits.a2aPushFirstAttemptPollMs));
    }
  }

  /** The JSON a push delivery POSTs, rendered now in its config's generation; an error when its task cannot be read. */
  async function bodyOf(subscription: SubscriptionRow, delivery: DeliveryRow): Promise<string> {
    if (!renderer) throw new Error('no A2A push renderer is registered (rpc/ registers it)');
    const { part, view } = (delivery.body as unknown as PushDeliveryBody).a2a;
    const task = await a2a.find(ownerOf(subscription), subscription.a2a_task_id!);
    const full = completed(view, task.transaction);
    const rendered =
      part === 'artifact' && !full?.result_payload ? null : renderer(task, subscription.a2a_generation!, subscription.a2a_task_name!, full, part);
    return JSON.stringify(rendered ?? renderer(task, subscription.a2a_generation!, subscription.a2a_task_name!, full, 'task'));
  }

  /** The headers A2A names: the config's token, and its authentication as `Authorization: <scheme> <credentials>`. */
  function headersOf(subscription: SubscriptionRow): Record<string, string> {
    return {
      ...(subscription.a2a_token ? { 'X-A2A-Notification-Token': subscription.a2a_token } : {}),
      ...(subscription.a2a_auth_scheme && subscription.a2a_auth_credentials
        ? { Authorization: `${subscription.a2a_auth_scheme} ${subscription.a2a_auth_credentials}` }
        : {}),
    };
  }

  return {
    set,
    get,
    list,
    remove,
    awaitFirstAttempt,
    bodyOf,
    headersOf,
    ensureRoomForOne,
    useRenderer: (render: PushRenderer) => {
      renderer = render;
    },
  };
}

export type A2APush = ReturnType<typeof createA2APush>;
