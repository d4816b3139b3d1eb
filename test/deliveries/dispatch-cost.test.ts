import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Actor } from '../helpers/actors.ts';
import { rpcCaller } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { act, agentMarket, buy } from '../helpers/market.ts';
import { startReceiver } from '../helpers/receiver.ts';

/**
 * The dispatcher's work for one event is the event's own subscriptions (issue 28 point 5): a user
 * who owns thousands of push configs on other tasks costs an event of one of its tasks nothing
 * more. Measured from outside the engine through the database's query events: the statements the
 * dispatcher's own database transactions run (recognised by their advisory lock), and the rows
 * those statements answer, while one move of a transaction is dispatched.
 */
let test: TestApp;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
  receiver = await startReceiver();
  rpc = rpcCaller(test);
});
afterAll(async () => {
  await receiver.close();
  await test.close();
});

const db = () => test.runtime.engine.dependencies.db;

interface QueryEvent {
  sql: string;
  bindings?: unknown[];
  __knexTxId?: string;
}

/**
 * The statements and rows of the dispatcher's transaction that dispatched something while `work`
 * runs (the turns that found nothing, and the sender's work, depend on timing, not on the event).
 */
async function dispatcherCost(work: () => Promise<unknown>): Promise<{ statements: number; rows: number }> {
  const turns = new Map<string, { statements: number; rows: number; dispatched: boolean }>();
  const onQuery = (query: QueryEvent) => {
    // Every dispatch turn starts with its advisory lock (webhook-dispatch.ts): that names its transaction.
    if (query.sql.includes('pg_try_advisory_xact_lock') && query.__knexTxId) turns.set(query.__knexTxId, { statements: 0, rows: 0, dispatched: false });
    const turn = query.__knexTxId ? turns.get(query.__knexTxId) : undefined;
    if (!turn) return;
    turn.statements += 1;
    if (/^delete from "undispatched_events"/i.test(query.sql)) turn.dispatched = true;
  };
  const onResponse = (response: unknown, query: QueryEvent) => {
    const turn = query.__knexTxId ? turns.get(query.__knexTxId) : undefined;
    if (turn) turn.rows += Array.isArray(response) ? response.length : ((response as { rows?: unknown[] } | null)?.rows?.length ?? 0);
  };
  db().on('query', onQuery);
  db().on('query-response', onResponse);
  try {
    await work();
  } finally {
    db().off('query', onQuery);
    db().off('query-response', onResponse);
  }
  const dispatching = [...turns.values()].filter((turn) => turn.dispatched);
  expect(dispatching).toHaveLength(1);
  return { statements: dispatching[0]!.statements, rows: dispatching[0]!.rows };
}

/** Push configs of `owner` on tasks that are not the measured one, written directly to keep the test small (as the observation did). */
async function ownConfigsElsewhere(owner: Actor, count: number) {
  const at = new Date();
  const rows = Array.from({ length: count }, (_, index) => {
    const taskId = randomUUID();
    return {
      id: randomUUID(),
      kind: 'a2a_push',
      owner_user_id: owner.userId,
      owner_type: 'agent',
      url: receiver.url('/elsewhere'),
      event_types: ['transaction.*'],
      secret: 'whsec_AAAA',
      created_at: at,
      a2a_generation: 'v1.0',
      a2a_task_id: taskId,
      a2a_task_name: taskId,
      a2a_config_id: `config-${index}`,
    };
  });
  for (let start = 0; start < rows.length; start += 500) await db()('webhook_subscriptions').insert(rows.slice(start, start + 500));
}

describe('dispatching one event', () => {
  it('reads as many rows and runs as many statements whether its user owns 10 or 2,010 push configs on other tasks, and still reaches its own', async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const purchases: string[] = [];
    for (const path of ['/first', '/second']) {
      const { id } = await buy(test, buyer, capability.id);
      await act(test, buyer, id, 'freeze').expect(200);
      await rpc.ok(buyer, 'CreateTaskPushNotificationConfig', { taskId: id, url: receiver.url(path) });
      purchases.push(id);
    }
    await test.http
      .post('/api/v1/webhooks')
      .set(buyer.headers)
      .send({ url: receiver.url('/hook'), event_types: ['transaction.*'] })
      .expect(201);
    await test.runtime.engine.webhooks.runOnce();

    await ownConfigsElsewhere(buyer, 10);
    await act(test, seller, purchases[0]!, 'accept').expect(200);
    const few = await dispatcherCost(() => test.runtime.engine.webhooks.runOnce());

    await ownConfigsElsewhere(buyer, 2_000);
    await act(test, seller, purchases[1]!, 'accept').expect(200);
    const many = await dispatcherCost(() => test.runtime.engine.webhooks.runOnce());

    expect(few.statements).toBeGreaterThan(0);
    expect(many).toEqual(few);
    // Each move still reached the config of its task and the buyer's webhook, and nothing else.
    const stateOf = (body: string) => (JSON.parse(body) as { statusUpdate?: { status: { state: string } } }).statusUpdate?.status.state;
    for (const path of ['/first', '/second']) expect(receiver.at(path).map((request) => stateOf(request.body))).toEqual(['TASK_STATE_WORKING']);
    expect(receiver.at('/hook').map((request) => JSON.parse(request.body).data.transaction_id)).toEqual(purchases);
    expect(receiver.at('/elsewhere')).toEqual([]);
  });
});
