import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rpcCaller, v03Text } from '../helpers/a2a.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { agentMarket } from '../helpers/market.ts';

/**
 * Which task an id names when it names more than one (store/a2a.ts findTask reads every task the
 * id may name in one statement; the engine picks): the caller's own conversation first, then a
 * purchase the caller bought under that v0.1 client id, then the transaction with that id. Such
 * ids collide only when a client reuses one of its task ids as another's client id, so the tests
 * give a task the colliding client id in the database, as such a client would have done.
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
});
afterAll(() => test.close());

type Json = Record<string, any>;

const purchase = (capabilityId: string, contextId: string) => ({
  message: { kind: 'message', messageId: randomUUID(), contextId, role: 'user', parts: [{ kind: 'data', data: { capability_id: capabilityId } }] },
});

async function nameAgain(table: 'a2a_tasks' | 'transactions', id: string, clientTaskId: string) {
  await test.runtime.engine.dependencies.db(table).where({ id }).update({ client_task_id: clientTaskId });
}

describe('an id that names more than one task', () => {
  it("answers the caller's conversation before a purchase with that id, whatever its history length", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const [purchaseContext, conversationContext] = [randomUUID(), randomUUID()];
    const bought = await rpc.ok(buyer, 'message/send', purchase(capability.id, purchaseContext));
    const conversation = await rpc.ok(buyer, 'message/send', v03Text('Translate a contract into Chinese', { contextId: conversationContext }));
    await nameAgain('a2a_tasks', conversation.id, bought.id);

    for (const historyLength of [undefined, 0, 1]) {
      const byPurchaseId = await rpc.ok(buyer, 'tasks/get', { id: bought.id, historyLength });
      expect(byPurchaseId.contextId).toBe(conversationContext);
      expect((byPurchaseId.history as Json[] | undefined)?.length ?? 0).toBeLessThanOrEqual(historyLength ?? Infinity);
    }
    const full = await rpc.ok(buyer, 'tasks/get', { id: bought.id });
    expect((full.history as Json[])[0]!.parts[0].text).toBe('Translate a contract into Chinese');
    expect((await rpc.ok(buyer, 'GetTask', { id: conversation.id })).contextId).toBe(conversationContext);
    // The seller has no conversation of that name: to the seller the id still names the purchase.
    const bySeller = await rpc.ok(seller, 'tasks/get', { id: bought.id });
    expect([bySeller.id, bySeller.contextId]).toEqual([bought.id, purchaseContext]);
  });

  it("answers the buyer's purchase with that client id before the transaction with that id, and the other party by id", async () => {
    const { buyer, seller, capability } = await agentMarket(test);
    const [firstContext, secondContext] = [randomUUID(), randomUUID()];
    const first = await rpc.ok(buyer, 'message/send', purchase(capability.id, firstContext));
    const second = await rpc.ok(buyer, 'message/send', purchase(capability.id, secondContext));
    await nameAgain('transactions', second.id, first.id);

    expect((await rpc.ok(buyer, 'tasks/get', { id: first.id })).contextId).toBe(secondContext);
    expect((await rpc.ok(buyer, 'GetTask', { id: second.id })).contextId).toBe(secondContext);
    // A client id names a task only among its buyer's own: the seller reads the first purchase by its id.
    const bySeller = await rpc.ok(seller, 'tasks/get', { id: first.id.toUpperCase() });
    expect(bySeller.id).toBe(first.id);
  });
});
