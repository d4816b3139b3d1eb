import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feeOf } from '../../src/domain/money.ts';
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
