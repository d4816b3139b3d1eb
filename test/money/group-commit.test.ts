import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import { feeOf } from '../../src/domain/money.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { type ActionExtra, createTransitions, newTransactionRow, type Transitions } from '../../src/engine/money/index.ts';
import type { TransactionAction } from '../../src/domain/escrow.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { type Actor, createAgent, createApiKey } from '../helpers/actors.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { act, balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit through the public API (issue 30): hundreds of concurrent state changes, most of
 * them sharing statements with others (engine/money/batcher.ts), a mix of valid ones, conflicting
 * ones (one transaction moved twice at once, a move the state does not allow) and failing ones
 * (not enough money). Each request must get its own answer, as it would alone, and the books must
 * hold afterwards: every currency sums to zero, no balance is negative, every transaction's
 * ledger entries match its state and every event stream is gap-free (test/helpers/books.ts).
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PLATFORM_FEE_BPS: '250' });
});
afterAll(() => test.close());

const price = 100n;
const format = (minor: bigint) => `${minor / 100n}.${String(minor % 100n).padStart(2, '0')}`;

interface Purchase {
  id: string;
  buyer: Actor;
  seller: Actor;
  /** The status the answers say the transaction has now. */
  status: string;
}

interface Call {
  purchase: Purchase;
  actor: Actor;
  action: string;
  response?: Response;
}

function call(purchase: Purchase, actor: Actor, action: string): Call {
  return { purchase, actor, action };
}

/** Sends every call at once and keeps each answer beside it. */
async function sendAtOnce(calls: Call[]): Promise<Call[]> {
  await Promise.all(
    calls.map(async (each) => {
      const body = each.action === 'deliver' ? { result_payload: { summary: `done ${each.purchase.id}` } } : undefined;
      each.response = await act(test, each.actor, each.purchase.id, each.action, body);
    }),
  );
  return calls;
}

const codeOf = (each: Call) => (each.response!.status === 200 ? 200 : (each.response!.body as { code: number }).code);

/** A successful move's answer is the transaction in its new state; the purchase takes it. */
function expectMoved(each: Call, status: string) {
  expect(each.response!.status, `${each.action} ${JSON.stringify(each.response!.body)}`).toBe(200);
  expect(each.response!.body.data).toMatchObject({ id: each.purchase.id, status });
  each.purchase.status = status;
}

/** 4090 with the state the transaction was found in and the action refused. */
function expectRefusedInState(each: Call, statuses: string[]) {
  expect(each.response!.status, `${each.action} ${JSON.stringify(each.response!.body)}`).toBe(409);
  expect(each.response!.body).toMatchObject({ code: 4090, data: { action: each.action } });
  expect(statuses).toContain(each.response!.body.data.status);
}

/** Two calls on one transaction at once: exactly one of them moved it, to `status`; the other got 4090. */
function expectOneOfTwo(pair: [Call, Call], status: string): Call {
  const winners = pair.filter((each) => each.response!.status === 200);
  expect(winners, pair.map((each) => `${each.action} ${JSON.stringify(each.response!.body)}`).join('\n')).toHaveLength(1);
  const winner = winners[0]!;
  expectMoved(winner, status);
  expectRefusedInState(
    pair.find((each) => each !== winner)!,
    [status],
  );
  return winner;
}

/** Buyers and sellers as agents of one platform key; `funds` credited to each buyer. */
async function market(buyerFunds: string[], sellers: number) {
  const key = await createApiKey(test);
  const sellerActors = await Promise.all(Array.from({ length: sellers }, () => createAgent(test, key)));
  const capabilities = await Promise.all(sellerActors.map((seller) => createCapability(test, seller, { price_ut: format(price) })));
  const buyers = await Promise.all(buyerFunds.map(() => createAgent(test, key)));
  await Promise.all(buyers.map((buyer, index) => credit(test, buyer.userId, buyerFunds[index]!)));
  return { sellers: sellerActors, capabilities, buyers };
}

/** `count` purchases per buyer, all created at once (each create is a state change with its idempotency claim). */
async function purchases(buyers: Actor[], sellers: Actor[], capabilities: { id: string }[], count: number): Promise<Purchase[][]> {
  return Promise.all(
    buyers.map((buyer, index) =>
      Promise.all(
        Array.from({ length: count }, async () => {
          const seller = index % sellers.length;
          const response = await test.http
            .post('/api/v1/transactions')
            .set(buyer.headers)
            .set('Idempotency-Key', randomUUID())
            .send({ capability_id: capabilities[seller]!.id });
          expect(response.status, JSON.stringify(response.body)).toBe(201);
          return { id: response.body.data.id as string, buyer, seller: sellers[seller]!, status: 'pending_freeze' };
        }),
      ),
    ),
  );
}

describe('hundreds of concurrent state changes sharing statements', () => {
  it(raceTest('answer each request as it would be answered alone, and keep the books'), { timeout: 300_000 }, async () => {
    const { sellers, capabilities, buyers } = await market([...Array<string>(12).fill('100.00'), ...Array<string>(4).fill('2.50')], 4);
    const rich = await purchases(buyers.slice(0, 12), sellers, capabilities, 8);
    const poor = await purchases(buyers.slice(12), sellers, capabilities, 4);
    const before = test.runtime.engine.transitions.batchStats();

    // Freezes: some sent twice at once, the poor buyers' four for money enough for two, and moves
    // the state never allows (a deliver before accept, a confirm before delivery).
    const twice = rich.flatMap((mine) => mine.slice(0, 2).map((each) => [call(each, each.buyer, 'freeze'), call(each, each.buyer, 'freeze')] as [Call, Call]));
    const once = rich.flatMap((mine) => mine.slice(2).map((each) => call(each, each.buyer, 'freeze')));
    const poorFreezes = poor.map((mine) => mine.map((each) => call(each, each.buyer, 'freeze')));
    const early = rich.flatMap((mine) => [call(mine[2]!, mine[2]!.seller, 'deliver'), call(mine[3]!, mine[3]!.buyer, 'confirm')]);
    await sendAtOnce([...twice.flat(), ...once, ...poorFreezes.flat(), ...early]);
    for (const pair of twice) expectOneOfTwo(pair, 'frozen');
    for (const each of once) expectMoved(each, 'frozen');
    for (const each of early) expectRefusedInState(each, ['pending_freeze', 'frozen']);
    for (const mine of poorFreezes) {
      expect(mine.map(codeOf).sort()).toEqual([200, 200, 4020, 4020]);
      for (const each of mine.filter((one) => codeOf(one) === 200)) expectMoved(each, 'frozen');
      for (const each of mine.filter((one) => codeOf(one) === 4020)) {
        expect(each.response!.status).toBe(402);
        expect(each.response!.body.data).toEqual({ currency: 'UT', available: '0.50', required: '1.00' });
      }
    }

    // Accepts racing cancels, accepts sent twice, rejects, a buyer trying the seller's accept
    // (4030, whatever the state), and the poor buyers cancelling what they froze.
    const races = rich.flatMap((mine) => mine.slice(0, 2).map((each) => [call(each, each.seller, 'accept'), call(each, each.buyer, 'cancel')] as [Call, Call]));
    const doubled = rich.flatMap((mine) =>
      mine.slice(2, 4).map((each) => [call(each, each.seller, 'accept'), call(each, each.seller, 'accept')] as [Call, Call]),
    );
    const rejects = rich.map((mine) => call(mine[4]!, mine[4]!.seller, 'reject'));
    const accepts = rich.flatMap((mine) => mine.slice(5).map((each) => call(each, each.seller, 'accept')));
    const wrongParty = rich.map((mine) => call(mine[7]!, mine[7]!.buyer, 'accept'));
    const cancels = poor.flatMap((mine) => mine.filter((each) => each.status === 'frozen').map((each) => call(each, each.buyer, 'cancel')));
    await sendAtOnce([...races.flat(), ...doubled.flat(), ...rejects, ...accepts, ...wrongParty, ...cancels]);
    for (const [accept, cancel] of races) {
      // A cancel of a frozen transaction is allowed; of an accepted one only after its deadline.
      const winner = accept.response!.status === 200 ? accept : cancel;
      expectOneOfTwo([accept, cancel], winner === accept ? 'accepted' : 'cancelled_by_buyer');
    }
    for (const pair of doubled) expectOneOfTwo(pair, 'accepted');
    for (const each of rejects) expectMoved(each, 'rejected_by_seller');
    for (const each of accepts) expectMoved(each, 'accepted');
    for (const each of cancels) expectMoved(each, 'cancelled_by_buyer');
    for (const each of wrongParty) expect(each.response!.body).toMatchObject({ code: 4030 });

    // Deliveries (one per buyer sent twice), then confirmations (one per buyer sent twice).
    const accepted = rich.map((mine) => mine.filter((each) => each.status === 'accepted'));
    const deliverTwice = accepted.map(
      (mine) => [call(mine.at(-1)!, mine.at(-1)!.seller, 'deliver'), call(mine.at(-1)!, mine.at(-1)!.seller, 'deliver')] as [Call, Call],
    );
    const delivers = accepted.flatMap((mine) => mine.slice(0, -1).map((each) => call(each, each.seller, 'deliver')));
    await sendAtOnce([...deliverTwice.flat(), ...delivers]);
    for (const pair of deliverTwice) expectOneOfTwo(pair, 'delivered');
    for (const each of delivers) expectMoved(each, 'delivered');
    const delivered = rich.map((mine) => mine.filter((each) => each.status === 'delivered'));
    const confirmTwice = delivered.map((mine) => [call(mine[0]!, mine[0]!.buyer, 'confirm'), call(mine[0]!, mine[0]!.buyer, 'confirm')] as [Call, Call]);
    const confirms = delivered.flatMap((mine) => mine.slice(1).map((each) => call(each, each.buyer, 'confirm')));
    await sendAtOnce([...confirmTwice.flat(), ...confirms]);
    for (const pair of confirmTwice) expectOneOfTwo(pair, 'settled');
    for (const each of confirms) expectMoved(each, 'settled');

    // Every transaction is in the state its answers said, and the money agrees.
    const all = [...rich.flat(), ...poor.flat()];
    const stored = await test.runtime.database.db('transactions').whereIn(
      'id',
      all.map((each) => each.id),
    );
    expect(new Map(stored.map((row: { id: string; status: string }) => [row.id, row.status]))).toEqual(new Map(all.map((each) => [each.id, each.status])));
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
    for (const [index, mine] of rich.entries()) {
      const settled = BigInt(mine.filter((each) => each.status === 'settled').length);
      expect(await balance(test, buyers[index]!)).toMatchObject({ available: format(10_000n - settled * price), frozen: '0.00' });
    }
    for (const buyer of buyers.slice(12)) expect(await balance(test, buyer)).toMatchObject({ available: '2.50', frozen: '0.00' });
    for (const seller of sellers) {
      const sales = BigInt(all.filter((each) => each.seller === seller && each.status === 'settled').length);
      expect((await balance(test, seller)).available).toBe(format(sales * (price - feeOf(price, 250))));
    }

    // On PostgreSQL the changes did share statements (the point of the test). The embedded
    // database runs each statement while nothing else runs, so there a batch rarely forms.
    const after = test.runtime.engine.transitions.batchStats();
    if (usingRealBackends()) expect(after.changes - before.changes).toBeGreaterThan(after.batches - before.batches);
    expect(after.largest).toBeLessThanOrEqual(64);
  });
});

/**
 * One batch, known to be one: a transitions instance of the test's own, whose row cache holds the
 * rows it just created, decides every move without a read, so moves started together are all
 * submitted before the first statement goes (batcher.ts). On both databases.
 */
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
    expect(planned[3]!.accepted_at).not.toBeNull();
    expect(planned[4]).toMatchObject({ dispute_reason: 'not what was asked', result_payload: { pages: 3 } });
    expect(await balance(test, buyers[0]!)).toMatchObject({ available: '95.00', frozen: '4.00' });
    expect(await checkBooks(test.runtime.database.db)).toEqual([]);
  });
});
