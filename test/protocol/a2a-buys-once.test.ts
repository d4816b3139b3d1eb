import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../helpers/actors.ts';
import { candidatesOf, rpcCaller, v10Text } from '../helpers/a2a.ts';
import { raceTest, startTestApp, type TestApp } from '../helpers/app.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * A conversation buys at most once, ever (issue 15 points 2 and 3): the transaction's unique
 * conversation_id holds after the pick's idempotency key has expired, a pick after a failed
 * freeze re-freezes the conversation's own transaction, and only the buyer may continue it.
 */
let test: TestApp;
let rpc: ReturnType<typeof rpcCaller>;
beforeAll(async () => {
  test = await startTestApp();
  rpc = rpcCaller(test);
});
afterAll(() => test.close());

type Json = Record<string, any>;
const db = () => test.runtime.engine.dependencies.db;

/** The pick's idempotency key (24 h) has gone, as the retention job deletes expired keys. */
const expireIdempotencyKeys = () => db()('idempotency_keys').delete();

async function conversation(funds: string) {
  const topic = `topic${randomBytes(3).toString('hex')}`;
  const buyer = await createAgent(test);
  const seller = await createAgent(test);
  await credit(test, buyer.userId, funds);
  const capability = await createCapability(test, seller, {
    title: `Proofread ${topic} essays`,
    description: `Careful proofreading of ${topic} essays`,
    price_ut: '12.00',
  });
  const started = (await rpc.ok(buyer, 'SendMessage', v10Text(`Proofread my ${topic} essay`))).task;
  const number = candidatesOf(started).candidates.find((entry: Json) => entry.capability_id === capability.id)!.number as number;
  return { buyer, seller, capability, started, number };
}

const transactionsOfConversation = async (conversationId: string) => db()('transactions').where({ conversation_id: conversationId });

describe('a conversation buys at most once', () => {
  it(raceTest('20 parallel picks, then two more after the key expired: one transaction, one freeze'), async () => {
    const { buyer, started, number } = await conversation('100.00');
    const picks = await Promise.all(Array.from({ length: 20 }, () => rpc.call(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }))));
    const ids = new Set(picks.filter((pick) => pick.result).map((pick) => pick.result!.task.metadata.marketplace.transaction_id));
    expect(ids.size).toBe(1);
    for (const pick of picks.filter((entry) => entry.error)) expect(pick.error!.code, JSON.stringify(pick.error)).not.toBe(-32603);
    await expireIdempotencyKeys();
    for (let again = 0; again < 2; again++) {
      const late = await rpc.call(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }));
      expect(late.result?.task.metadata.marketplace.transaction_id ?? null, JSON.stringify(late.error)).toBe([...ids][0]);
    }
    expect(await transactionsOfConversation(started.id)).toHaveLength(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '88.00', frozen: '12.00' });
  });

  it('a pick whose freeze failed is frozen again, on the same transaction, after its key expired', async () => {
    const { buyer, started, number } = await conversation('5.00');
    const failed = await rpc.call(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }));
    expect(failed.error).toMatchObject({ data: { code: 4020 } });
    const [pending] = await transactionsOfConversation(started.id);
    expect(pending).toMatchObject({ status: 'pending_freeze' });
    await expireIdempotencyKeys();
    expect((await rpc.call(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }))).error).toMatchObject({ data: { code: 4020 } });
    await credit(test, buyer.userId, '20.00');
    await expireIdempotencyKeys();
    const picked = (await rpc.ok(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }))).task;
    expect(picked.metadata.marketplace).toMatchObject({ transaction_id: pending.id, status: 'frozen' });
    expect(await transactionsOfConversation(started.id)).toHaveLength(1);
    expect(await db()('transactions').where({ buyer_user_id: buyer.userId })).toHaveLength(1);
    expect(await balance(test, buyer)).toMatchObject({ available: '13.00', frozen: '12.00' });
  });

  it('the database refuses a second transaction for one conversation', async () => {
    const { buyer, started, number } = await conversation('100.00');
    await rpc.ok(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }));
    const [own] = await transactionsOfConversation(started.id);
    const copy = { ...own, id: crypto.randomUUID(), client_task_id: null };
    await expect(db()('transactions').insert(copy)).rejects.toThrow(/transactions_one_per_conversation/);
  });
});

describe('only the buyer continues a conversation', () => {
  it("the seller sending a pick, words or an action on the buyer's conversation gets -32001, and nothing changes", async () => {
    const { buyer, seller, started, number } = await conversation('100.00');
    for (const message of [v10Text(String(number), { taskId: started.id }), v10Text('something else entirely', { taskId: started.id })]) {
      expect((await rpc.call(seller, 'SendMessage', message)).error).toMatchObject({ code: -32001 });
    }
    expect(await transactionsOfConversation(started.id)).toHaveLength(0);
    const picked = (await rpc.ok(buyer, 'SendMessage', v10Text(String(number), { taskId: started.id }))).task;
    const transactionId = picked.metadata.marketplace.transaction_id as string;
    // Once bought, the seller sees the transaction's task, but still cannot write to it, by either id.
    for (const id of [started.id, transactionId]) {
      expect((await rpc.call(seller, 'SendMessage', v10Text('1', { taskId: id }))).error).toMatchObject({ code: -32001 });
      expect(
        (
          await rpc.call(seller, 'SendMessage', {
            message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', taskId: id, parts: [{ data: { action: 'confirm' } }] },
          })
        ).error,
      ).toMatchObject({ code: -32001 });
    }
    expect((await rpc.ok(seller, 'GetTask', { id: transactionId })).id).toBe(transactionId);
    const other = await createAgent(test);
    expect((await rpc.call(other, 'SendMessage', v10Text('1', { taskId: started.id }))).error).toMatchObject({ code: -32001 });
  });
});
