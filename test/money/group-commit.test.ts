import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { TransactionAction } from '../../src/domain/escrow.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { type ActionExtra, createTransitions, newTransactionRow, type Transitions } from '../../src/engine/money/index.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { type Actor, createAgent, createApiKey } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit in known batches (engine/money/batcher.ts, store/change.ts), on both databases: a
 * transitions instance of the test's own, whose row cache holds the rows it just created, decides
 * every move without a read, so moves started together are all submitted before the first
 * statement goes and share one statement. What concurrent requests over HTTP get is
 * test/money/group-commit-http.test.ts.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PLATFORM_FEE_BPS: '250' });
});
afterAll(() => test.close());

const price = 100n;

/** Buyers and sellers as agents of one platform key; `funds` credited to each buyer. */
async function market(buyerFunds: string[], sellers: number) {
  const key = await createApiKey(test);
  const sellerActors = await Promise.all(Array.from({ length: sellers }, () => createAgent(test, key)));
  const capabilities = await Promise.all(sellerActors.map((seller) => createCapability(test, seller, { price_ut: '1.00' })));
  const buyers = await Promise.all(buyerFunds.map(() => createAgent(test, key)));
  await Promise.all(buyers.map((buyer, index) => credit(test, buyer.userId, buyerFunds[index]!)));
  return { sellers: sellerActors, capabilities, buyers };
}

describe('one batch with a change that fails', () => {
  async function ownTransitions() {
    const { dependencies } = test.runtime.engine;
    const publisher = { publish: () => {}, flush: async () => {}, close: async () => {} };
    return createTransitions(dependencies, publisher);
  }

  async function pendingPurchases(transitions: Transitions, buyer: Actor, capabilityId: string, count: number) {
    const { dependencies } = test.runtime.engine;
    const principal = principalOf(buyer);
    const capability = (await dependencies.db('capabilities').where({ id: capabilityId }).first()) as CapabilityRow;
    return Promise.all(
      Array.from({ length: count }, () =>
        withSingleStatement(dependencies.db, (unit) =>
          transitions.insert(unit, newTransactionRow(principal, { capability_id: capabilityId }, capability, price, dependencies.now(), 250)),
        ),
      ),
    );
  }

  const principalOf = (actor: Actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null });

  it('writes the others: the freeze without money alone is refused, a second move of one transaction is decided again', async () => {
    const { capabilities, buyers } = await market(['100.00', '0.50'], 1);
    const [richBuyer, poorBuyer] = [buyers[0]!, buyers[1]!];
    const transitions = await ownTransitions();
    const rich = await pendingPurchases(transitions, richBuyer, capabilities[0]!.id, 4);
    const [poor] = await pendingPurchases(transitions, poorBuyer, capabilities[0]!.id, 1);
    const before = transitions.batchStats();

    const freeze = (buyer: Actor, id: string) =>
      withSingleStatement(test.runtime.engine.dependencies.db, (unit) => transitions.move(unit, id, 'freeze', { principal: principalOf(buyer) }));
    const answers = await Promise.allSettled([...rich.map((row) => freeze(richBuyer, row.id)), freeze(poorBuyer, poor!.id), freeze(richBuyer, rich[0]!.id)]);

    expect(answers.slice(0, 4).map((answer) => answer.status === 'fulfilled' && answer.value.status)).toEqual(['frozen', 'frozen', 'frozen', 'frozen']);
    expect((answers[4] as PromiseRejectedResult).reason).toBeInstanceOf(InsufficientBalance);
    expect((answers[5] as PromiseRejectedResult).reason).toMatchObject({ code: 4090, data: { status: 'frozen', action: 'freeze' } });
    const after = transitions.batchStats();
    // The five first moves shared one statement that the poor buyer's freeze failed; it was split.
    expect(after.batches - before.batches).toBe(2);
    expect(after.largest).toBe(5);
    expect(after.splits - before.splits).toBeGreaterThan(0);

    expect(await balance(test, richBuyer)).toMatchObject({ available: '96.00', frozen: '4.00' });
    expect(await balance(test, poorBuyer)).toMatchObject({ available: '0.50', frozen: '0.00' });
    const seen = await test.http.get(`/api/v1/transactions/${poor!.id}`).set(poorBuyer.headers).expect(200);
    expect(seen.body.data.status).toBe('pending_freeze');
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
  });
  it('completes a key with the change of the request that holds it, when the request it was taken from shares the batch', async () => {
    const { capabilities, buyers } = await market(['10.00'], 1);
    const buyer = buyers[0]!;
    const { dependencies } = test.runtime.engine;
    const transitions = await ownTransitions();
    const capability = (await dependencies.db('capabilities').where({ id: capabilities[0]!.id }).first()) as CapabilityRow;
    const [original, retry] = [randomUUID(), randomUUID()];
    const scopeHash = randomUUID().replace(/-/g, '');
    const at = dependencies.now();
    // The retry took the claim over: the key's row names its token now.
    await dependencies.db('idempotency_keys').insert({
      scope_hash: scopeHash,
      fingerprint: 'f'.repeat(64),
      state: 'in_flight',
      claim_token: retry,
      created_at: at,
      expires_at: new Date(at.getTime() + 60_000),
    });
    const create = (token: string) =>
      withSingleStatement(
        dependencies.db,
        (unit) => transitions.insert(unit, newTransactionRow(principalOf(buyer), { capability_id: capability.id }, capability, price, at, 250)),
        { claim: { scopeHash, token, lockId: '4242', responseStatus: 201, completed: false } },
      );
    const before = transitions.batchStats();
    const [lost, won] = await Promise.allSettled([create(original), create(retry)]);

    expect(transitions.batchStats().batches - before.batches).toBe(1);
    expect((lost as PromiseRejectedResult).reason).toMatchObject({ code: 4091 });
    const created = (won as PromiseFulfilledResult<{ id: string }>).value;
    const key = await dependencies.db('idempotency_keys').where({ scope_hash: scopeHash }).first();
    expect(key).toMatchObject({ state: 'completed', response_status: 201, response_body: { id: created.id } });
    expect(await dependencies.db('transactions').where({ buyer_user_id: buyer.userId }).pluck('id')).toEqual([created.id]);
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
  });
  it('writes moves of every kind in one batch, each row exactly as its move planned it and nothing else changed', async () => {
    const { capabilities, buyers, sellers } = await market(['100.00'], 1);
    const [buyer, seller] = [principalOf(buyers[0]!), principalOf(sellers[0]!)];
    const { db } = test.runtime.engine.dependencies;
    const transitions = await ownTransitions();
    const rows = await pendingPurchases(transitions, buyers[0]!, capabilities[0]!.id, 6);
    const [a, b, c, d, e, f] = rows.map((row) => row.id) as [string, string, string, string, string, string];
    const move = (id: string, action: TransactionAction, mover: Principal, extra: ActionExtra = {}) =>
      withSingleStatement(db, (unit) => transitions.move(unit, id, action, { principal: mover }, extra));
    // Bring the purchases to the states the batch starts from, one stage at a time.
    await Promise.all([b, c, d, e, f].map((id) => move(id, 'freeze', buyer)));
    await Promise.all([c, d, e].map((id) => move(id, 'accept', seller)));
    await Promise.all([d, e].map((id) => move(id, 'deliver', seller, { result_payload: { pages: 3 } })));
    const before = transitions.batchStats();

    const planned = await Promise.all([
      move(a, 'freeze', buyer),
      move(b, 'accept', seller),
      move(c, 'deliver', seller, { result_payload: { summary: 'done' } }),
      move(d, 'confirm', buyer),
      move(e, 'dispute', buyer, { reason: 'not what was asked' }),
      move(f, 'reject', seller),
    ]);

    expect(transitions.batchStats()).toMatchObject({ batches: before.batches + 1, largest: 6 });
    expect(planned.map((row) => row.status)).toEqual(['frozen', 'accepted', 'delivered', 'settled', 'disputed', 'rejected_by_seller']);
    // Every column of every row is what its move planned: what a move sets, and what it leaves alone.
    const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
    for (const row of planned) {
      const stored = plain(await db('transactions').where({ id: row.id }).first());
      expect(Object.fromEntries(Object.keys(row).map((column) => [column, stored[column]]))).toEqual(plain(row));
    }
    expect(planned[2]).toMatchObject({ result_payload: { summary: 'done' } });
    expect(planned[3]).toMatchObject({ result_payload: { pages: 3 }, status: 'settled' });
    expect(planned[3].accepted_at).not.toBeNull();
    expect(planned[4]).toMatchObject({ dispute_reason: 'not what was asked', result_payload: { pages: 3 } });
    expect(await balance(test, buyers[0]!)).toMatchObject({ available: '95.00', frozen: '4.00' });
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
  });
});
