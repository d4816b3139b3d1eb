import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor } from '../helpers/actors.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions, newTransactionRow } from '../../src/engine/money/index.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import type { OutboxRow } from '../../src/store/outbox.ts';
import { limits } from '../../src/limits.ts';
import { systemAccountId } from '../../src/store/accounts.ts';
import { applyMovement, type Leg, shortfallOf } from '../../src/store/ledger.ts';
import { act, admin, agentMarket, buy } from '../helpers/market.ts';

/**
 * The escrow moves' rules (src/engine/money/transitions.ts) that the money path's mutation run
 * of transitions.ts (docs/decisions/operations-and-testing.md "money-path (issue 30)") found no
 * test for in its test set: what a party sees of a purchase's timestamps and wallet history as it
 * moves, who may move it, and a move decided again when this instance's remembered row is stale.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ AUTO_CONFIRM_HOURS: '72', DELIVERY_DEADLINE_HOURS: '48', PLATFORM_FEE_BPS: '1000' });
});
afterAll(() => test.close());

type Json = Record<string, any>;
const hourMs = 3600 * 1000;

const view = async (actor: Actor, id: string) => (await test.http.get(`/api/v1/transactions/${id}`).set(actor.headers).expect(200)).body.data as Json;
const history = async (actor: Actor, id: string) =>
  ((await test.http.get('/api/v1/wallet/transactions').set(actor.headers).query({ page_size: 100 }).expect(200)).body.data.items as Json[])
    .filter((entry) => entry.biz_ref_id === id)
    .map(({ type, bucket, amount, description }) => ({ type, bucket, amount, description }))
    .reverse();

describe("a purchase's timestamps as it moves", () => {
  it('sets each when its step is taken and keeps it through the later steps', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    const frozen = (await act(test, buyer, id, 'freeze').expect(200)).body.data as Json;
    expect(frozen).toMatchObject({ accepted_at: null, delivered_at: null, confirmed_at: null, settled_at: null, delivery_deadline: null });
    test.clock.advanceMs(hourMs);
    const accepted = (await act(test, seller, id, 'accept').expect(200)).body.data as Json;
    expect(accepted.frozen_at).toBe(frozen.frozen_at);
    expect(new Date(accepted.delivery_deadline).getTime() - new Date(accepted.accepted_at).getTime()).toBe(48 * hourMs);
    test.clock.advanceMs(hourMs);
    const delivered = (await act(test, seller, id, 'deliver', { result_payload: { pages: 2 } }).expect(200)).body.data as Json;
    expect(delivered).toMatchObject({ frozen_at: frozen.frozen_at, accepted_at: accepted.accepted_at, delivery_deadline: accepted.delivery_deadline });
    expect(delivered).toMatchObject({ confirmed_at: null, settled_at: null, dispute_reason: null });
    expect(new Date(delivered.auto_confirm_at).getTime() - new Date(delivered.delivered_at).getTime()).toBe(72 * hourMs);
    test.clock.advanceMs(hourMs);
    const settled = (await act(test, buyer, id, 'confirm').expect(200)).body.data as Json;
    expect(settled).toMatchObject({ status: 'settled', frozen_at: frozen.frozen_at, accepted_at: accepted.accepted_at, delivered_at: delivered.delivered_at });
    expect(settled.confirmed_at).not.toBeNull();
    expect(settled.settled_at).toBe(settled.confirmed_at);
  });

  it('keeps the dispute reason once the operator resolved the dispute', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, buyer, id, 'dispute', { reason: 'half of it is missing' }).expect(200);
    const resolved = (await test.http.post(`/api/v1/admin/transactions/${id}/resolve`).set(admin).send({ outcome: 'settle' }).expect(200)).body.data;
    expect(resolved).toMatchObject({ status: 'settled', dispute_reason: 'half of it is missing' });
  });
});

describe("a purchase's money in the wallet history", () => {
  it('names each entry of a settled sale: the buyer pays, the seller earns, the platform takes its fee', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    await act(test, buyer, id, 'freeze').expect(200);
    await act(test, seller, id, 'accept').expect(200);
    await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, buyer, id, 'confirm').expect(200);
    expect(await history(buyer, id)).toEqual([
      { type: 'freeze', bucket: 'available', amount: '-10.00', description: 'Funds frozen for a purchase' },
      { type: 'freeze', bucket: 'frozen', amount: '10.00', description: 'Funds frozen for a purchase' },
      { type: 'expense', bucket: 'frozen', amount: '-10.00', description: 'Payment for a purchase' },
    ]);
    expect(await history(seller, id)).toEqual([{ type: 'income', bucket: 'available', amount: '9.00', description: 'Income from a sale' }]);
    const fee = await test.runtime.database
      .db('ledger_entries')
      .where({ biz_ref_id: id, account_id: systemAccountId('platform_fee', 'UT') })
      .select('type', 'amount', 'description');
    expect(fee.map((entry) => ({ ...entry, amount: String(entry.amount) }))).toEqual([{ type: 'fee', amount: '100', description: 'Platform fee' }]);
  });

  it('names a cancelled purchase an unfreeze and a refunded one a refund, each with the status it ended in', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const cancelled = await buy(test, buyer, capability.id);
    await act(test, buyer, cancelled.id, 'freeze').expect(200);
    // A frozen purchase may be cancelled at once: the delivery deadline guards an accepted one only.
    expect((await act(test, buyer, cancelled.id, 'cancel').expect(200)).body.data.status).toBe('cancelled_by_buyer');
    expect((await history(buyer, cancelled.id)).slice(2)).toEqual([
      { type: 'unfreeze', bucket: 'frozen', amount: '-10.00', description: 'Funds released (cancelled_by_buyer)' },
      { type: 'unfreeze', bucket: 'available', amount: '10.00', description: 'Funds released (cancelled_by_buyer)' },
    ]);

    const refunded = await buy(test, buyer, capability.id);
    await act(test, buyer, refunded.id, 'freeze').expect(200);
    await act(test, seller, refunded.id, 'accept').expect(200);
    await act(test, seller, refunded.id, 'deliver', { result_payload: {} }).expect(200);
    await act(test, buyer, refunded.id, 'dispute').expect(200);
    await test.http.post(`/api/v1/admin/transactions/${refunded.id}/resolve`).set(admin).send({ outcome: 'refund' }).expect(200);
    expect((await history(buyer, refunded.id)).slice(2)).toEqual([
      { type: 'refund', bucket: 'frozen', amount: '-10.00', description: 'Funds released (refunded)' },
      { type: 'refund', bucket: 'available', amount: '10.00', description: 'Funds released (refunded)' },
    ]);
  });
});

describe('who may move a purchase', () => {
  it('refuses a party the step is not theirs (4030) and a transaction that does not exist (4040)', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    expect((await act(test, seller, id, 'freeze').expect(403)).body.code).toBe(4030);
    await act(test, buyer, id, 'freeze').expect(200);
    expect((await act(test, buyer, id, 'accept').expect(403)).body.code).toBe(4030);
    expect((await view(buyer, id)).status).toBe('frozen');
    const missing = await act(test, buyer, randomUUID(), 'freeze').expect(404);
    expect(missing.body.code).toBe(4040);
  });
});

describe('an auto-accepted purchase', () => {
  it('takes the accept step with its freeze only: its delivery is delivered, not accepted again', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00', { price_ut: '20.00', auto_accept_min_ut: '20.00' });
    const { id } = await buy(test, buyer, capability.id);
    expect((await act(test, buyer, id, 'freeze').expect(200)).body.data.status).toBe('accepted');
    expect((await act(test, seller, id, 'deliver', { result_payload: {} }).expect(200)).body.data.status).toBe('delivered');
    expect((await view(buyer, id)).status).toBe('delivered');
  });
});

describe("a purchase's creation event", () => {
  it("says the action was the purchase's creation, from no earlier status", async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    const [created] = await test.runtime.database.db('outbox_events').where({ transaction_id: id }).orderBy('transaction_sequence');
    expect(created.event_type).toBe('transaction.pending_freeze');
    expect(created.payload).toMatchObject({ action: 'create', previous_status: null });
  });
});

describe('a move decided on a remembered row that is stale', () => {
  it('reads the row again when the remembered one refuses the move, and takes the move on the row as it is', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const { dependencies } = test.runtime.engine;
    // A transitions instance of the test's own, so that its row cache is known to hold the frozen row.
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const { id } = await buy(test, buyer, capability.id);
    const principal: Principal = { user_id: buyer.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null };
    await withSingleStatement(dependencies.db, (unit) => transitions.move(unit, id, 'freeze', { principal }));
    // Another instance delivered it meanwhile (written around this one): the remembered row says frozen.
    const at = dependencies.now();
    await dependencies
      .db('transactions')
      .where({ id })
      .update({ status: 'delivered', delivered_at: at, auto_confirm_at: new Date(at.getTime() + 72 * hourMs), event_sequence: 4 });
    const settled = await withSingleStatement(dependencies.db, (unit) => transitions.move(unit, id, 'confirm', { principal }));
    expect(settled.status).toBe('settled');
    expect((await view(buyer, id)).status).toBe('settled');
  });
});

describe("a move's own transitions instance", () => {
  const ownTransitions = (published: OutboxRow[] = []) =>
    createTransitions(test.runtime.engine.dependencies, { publish: (row) => published.push(row), flush: async () => {}, close: async () => {} });
  const principalOf = (actor: Actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null });

  it('publishes the events of a move once it committed', async () => {
    const { buyer, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    const published: OutboxRow[] = [];
    const transitions = ownTransitions(published);
    await withSingleStatement(test.runtime.engine.dependencies.db, (unit) => transitions.move(unit, id, 'freeze', { principal: principalOf(buyer) }));
    expect(published.map((row) => [row.transaction_id, row.event_type])).toEqual([[id, 'transaction.frozen']]);
  });

  it('answers 4040 for a transaction that does not exist, whoever moves it (a party or the operator)', async () => {
    const { buyer } = await agentMarket(test, '0');
    const transitions = ownTransitions();
    const { db } = test.runtime.engine.dependencies;
    const move = withSingleStatement(db, (unit) => transitions.move(unit, randomUUID(), 'freeze', { principal: principalOf(buyer) }));
    await expect(move).rejects.toMatchObject({ code: 4040, detail: 'transaction not found' });
    const resolve = withSingleStatement(db, (unit) => transitions.move(unit, randomUUID(), 'resolve_refund', { system: 'admin' }));
    await expect(resolve).rejects.toMatchObject({ code: 4040, detail: 'transaction not found' });
  });

  it('answers 4091 when the idempotency claim its statement completes is no longer its own', async () => {
    const { buyer, capability: offered } = await agentMarket(test, '100.00');
    const { dependencies } = test.runtime.engine;
    const capability = (await dependencies.db('capabilities').where({ id: offered.id }).first()) as CapabilityRow;
    const scopeHash = randomUUID().replace(/-/g, '');
    const at = dependencies.now();
    // A retry took the claim over: the key's row names another token than this request's.
    await dependencies.db('idempotency_keys').insert({
      scope_hash: scopeHash,
      fingerprint: 'f'.repeat(64),
      state: 'in_flight',
      claim_token: randomUUID(),
      created_at: at,
      expires_at: new Date(at.getTime() + 60_000),
    });
    const create = withSingleStatement(
      dependencies.db,
      (unit) => ownTransitions().insert(unit, newTransactionRow(principalOf(buyer), { capability_id: capability.id }, capability, 1000n, at, 250)),
      { claim: { scopeHash, token: randomUUID(), lockId: '4243', responseStatus: 201, completed: false } },
    );
    await expect(create).rejects.toMatchObject({ code: 4091, message: 'a request with this Idempotency-Key is still being processed' });
    expect(await dependencies.db('transactions').where({ buyer_user_id: buyer.userId }).pluck('id')).toEqual([]);
  });

  it('tries a move that keeps losing its compare-and-set a bounded number of times, then answers 4092', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00');
    const { id } = await buy(test, buyer, capability.id);
    const db = test.runtime.database.db;
    const transitions = ownTransitions();
    await withSingleStatement(db, (unit) => transitions.move(unit, id, 'freeze', { principal: principalOf(buyer) }));
    // Every later update of this row is skipped (as if another request always moved it first) and counted.
    const tag = `cas_${id.replace(/-/g, '')}`;
    await db.raw(`CREATE TABLE ${tag} (at int)`);
    await db.raw(`CREATE FUNCTION ${tag}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO ${tag} VALUES (1); RETURN NULL; END $$`);
    await db.raw(`CREATE TRIGGER ${tag} BEFORE UPDATE ON transactions FOR EACH ROW WHEN (OLD.id = '${id}') EXECUTE FUNCTION ${tag}()`);
    try {
      const accept = withSingleStatement(db, (unit) => transitions.move(unit, id, 'accept', { principal: principalOf(seller) }));
      await expect(accept).rejects.toMatchObject({ code: 4092, message: 'the transaction changed concurrently; retry' });
      // The remembered row is tried first, at no cost, then the row is read and tried three times.
      expect(Number((await db(tag).count<{ count: string }[]>('* as count'))[0]!.count)).toBe(limits.compareAndSetAttemptsMax + 1);
    } finally {
      await db.raw(`DROP TRIGGER ${tag} ON transactions`);
      await db.raw(`DROP FUNCTION ${tag}()`);
      await db.raw(`DROP TABLE ${tag}`);
    }
    expect((await view(buyer, id)).status).toBe('frozen');
  });
});

describe('the ledger writer', () => {
  const [a, b, c] = ['a', 'b', 'c'].map((letter) => `00000000-0000-4000-8000-00000000000${letter}`) as [string, string, string];
  const leg = (accountId: string, bucket: Leg['bucket'], amount: bigint): Leg => ({
    accountId,
    currency: 'UT',
    bucket,
    amount,
    type: 'freeze',
    description: 'test',
  });
  const shortOfMoney = { code: '23514', constraint: 'accounts_available_not_negative' };

  it('names as short of money the account the movement takes the most from, by what it takes net', () => {
    const legs = [leg(a, 'available', -3n), leg(b, 'available', -7n), leg(c, 'available', -5n), leg(a, 'frozen', 15n)];
    expect(shortfallOf(shortOfMoney, legs)).toMatchObject({ accountId: b, currency: 'UT', required: 7n });
    // Taken and given back within the movement is not taken: b gives 3 back of its 7.
    expect(shortfallOf(shortOfMoney, [...legs, leg(b, 'available', 3n)])).toMatchObject({ accountId: c, required: 5n });
  });

  it('answers no shortfall for another failure, or for legs that take nothing from an available balance', () => {
    const freeze = [leg(a, 'available', -5n), leg(a, 'frozen', 5n)];
    expect(shortfallOf({ code: '23514', constraint: 'accounts_frozen_not_negative' }, freeze)).toBeNull();
    expect(shortfallOf({ code: '23505', constraint: 'accounts_available_not_negative' }, freeze)).toBeNull();
    expect(shortfallOf(new Error('connection lost'), freeze)).toBeNull();
    expect(shortfallOf(shortOfMoney, [leg(a, 'available', 5n), leg(a, 'frozen', -5n)])).toBeNull();
    expect(shortfallOf(shortOfMoney, [leg(a, 'available', -5n), leg(a, 'available', 5n)])).toBeNull();
  });

  it('refuses a movement that is unbalanced, has a leg of zero or has no legs, before it reaches the database', async () => {
    const db = test.runtime.engine.dependencies.db;
    const at = new Date();
    await expect(applyMovement(db, [leg(a, 'available', -5n), leg(b, 'available', 4n)], null, at)).rejects.toThrow('unbalanced movement in UT: -1');
    await expect(applyMovement(db, [leg(a, 'available', 5n), leg(b, 'available', 5n)], null, at)).rejects.toThrow('unbalanced movement in UT: 10');
    await expect(applyMovement(db, [leg(a, 'available', 0n), leg(b, 'available', 0n)], null, at)).rejects.toThrow('a ledger leg of zero');
    await expect(applyMovement(db, [], null, at)).rejects.toThrow('a movement without legs');
  });
});
