import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Actor, createAgent, signUpHuman } from '../helpers/actors.ts';
import { startTestApp, type TestApp, raceTest } from '../helpers/app.ts';
import { act, admin, agentMarket, balance, buy, createCapability, credit } from '../helpers/market.ts';
import { type TransactionStatus, terminalStatuses } from '../../src/domain/escrow.ts';

/**
 * Money invariants under concurrency, through the public REST API. A seeded random workload of
 * purchases, escrow moves, wrong-party calls, retries and credits runs in concurrent batches;
 * afterwards the books are checked directly in the database: every currency sums to zero, no
 * balance is negative, every hold matches an open transaction, the ledger replays to the
 * balances, every key had one effect and every event stream is gap-free.
 *
 * The workload's seed is fixed; MONEY_SEED=<n> runs another one (and reproduces a printed one).
 */
const feeBps = 250;
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp({ PLATFORM_FEE_BPS: String(feeBps) });
});
afterAll(() => test.close());

const hoursMs = 60 * 60 * 1000;
const openStatuses = ['frozen', 'accepted', 'delivered', 'disputed'];
const allowedErrorCodes = new Set([4020, 4030, 4040, 4090, 4091]);

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    chance: (probability: number) => next() < probability,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

const format = (value: bigint) =>
  `${value < 0n ? '-' : ''}${(value < 0n ? -value : value) / 100n}.${String((value < 0n ? -value : value) % 100n).padStart(2, '0')}`;
const feeOf = (price: bigint) => (price * BigInt(feeBps)) / 10_000n;

interface Party extends Actor {
  name: string;
  space: 'agent' | 'human';
}

interface Offer {
  id: string;
  seller: Party;
  unitPrice: bigint;
  perHour: boolean;
}

interface Outcome {
  label: string;
  response: Response;
}

/** Every response of the workload must be a success or a documented refusal, never a 5xx. */
function expectDocumented(outcome: Outcome) {
  const { status, body } = outcome.response;
  const detail = `${outcome.label} -> ${status} ${JSON.stringify(body)}`;
  expect(status, detail).toBeLessThan(500);
  if (status >= 400) {
    expect(allowedErrorCodes.has(body.code), detail).toBe(true);
  } else {
    expect([200, 201], detail).toContain(status);
    expect(body.code, detail).toBe(0);
  }
}

describe(raceTest('the books under a random concurrent workload'), () => {
  it('stay balanced, non-negative, replayable and gap-free', { timeout: 180_000 }, async () => {
    // One fixed workload unless MONEY_SEED asks for another: a run proves the same thing every time
    // (the deliveries made due before the sweep guarantee settlements whatever the seed).
    const seed = process.env.MONEY_SEED ? Number(process.env.MONEY_SEED) : 20_261_124;
    console.log(`money invariants: MONEY_SEED=${seed}`);
    const random = prng(seed);
    const db = test.runtime.database.db;

    // --- The market: six agents and two humans, each selling one capability. ---
    const parties: Party[] = [];
    for (let index = 0; index < 6; index++) parties.push({ ...(await createAgent(test)), name: `agent${index}`, space: 'agent' });
    for (let index = 0; index < 2; index++) parties.push({ ...(await signUpHuman(test)), name: `human${index}`, space: 'human' });
    const stranger: Party = { ...(await createAgent(test)), name: 'stranger', space: 'agent' };
    const credited = new Map<string, bigint>(parties.map((party) => [party.userId, 0n]));

    const randomPrice = (minCents: number, maxCents: number) => BigInt(random.int(minCents, maxCents));
    const offers: Offer[] = [];
    for (const [index, seller] of parties.entries()) {
      let unitPrice = randomPrice(500, 6000);
      const fields: Record<string, unknown> = {};
      if (index === 0) fields.auto_accept_min_ut = format(unitPrice); // every purchase auto-accepts
      if (index === 1) {
        unitPrice = randomPrice(100, 900);
        fields.pricing_model = 'per_hour';
      }
      if (index === 2) unitPrice = randomPrice(1, 39); // so small that the 2.5 % fee rounds to zero
      if (index === 3) unitPrice = 0n; // a free capability moves no money at all
      const offer = await createCapability(test, seller, { ...fields, price_ut: format(unitPrice) });
      offers.push({ id: offer.id, seller, unitPrice, perHour: index === 1 });
    }
    for (const party of parties) {
      // Tight budgets: most buyers afford two or three purchases, so freezes fail with 4020 too.
      const amount = randomPrice(0, 12_000);
      if (amount > 0n) {
        await credit(test, party.userId, format(amount), party.space === 'agent' ? 'UT' : 'CNY');
        credited.set(party.userId, amount);
      }
    }

    // --- Bookkeeping of what the workload did, to judge the results afterwards. ---
    interface Known {
      id: string;
      buyer: Party;
      seller: Party;
      status: string;
    }
    const known: Known[] = [];
    // Keys are kept for 24 hours and the clock jumps three days halfway, so retries only reuse
    // keys of the current epoch: an older key is legitimately forgotten.
    let epoch = 0;
    const createsByKey = new Map<string, { buyer: Party; body: Record<string, unknown>; epoch: number; responses: Response[] }>();
    let createsWithoutKey = 0;
    const actionKeys = new Map<string, { run: () => Promise<Response>; epoch: number; responses: Response[] }>();
    type CreditEntry = { userId: string; amount: bigint; currency: 'UT' | 'CNY'; epoch: number; responses: Response[] };
    const creditKeys = new Map<string, CreditEntry>();
    const ofThisEpoch = <T extends { epoch: number }>(entries: Map<string, T>) => [...entries.entries()].filter(([, entry]) => entry.epoch === epoch);
    const outcomes: Outcome[] = [];

    const headersFor = (party: Party) => party.headers;
    const post = (path: string, party: Party | null, body: Record<string, unknown> | undefined, key?: string) => {
      const request = test.http.post(path).set(party ? headersFor(party) : admin);
      if (key !== undefined) request.set('Idempotency-Key', key);
      return body === undefined ? request : request.send(body);
    };

    // --- Operations. Each returns the promise of its response, run concurrently in a batch. ---
    type Operation = { label: string; run: () => Promise<Response>; after?: (response: Response) => void };

    function createOperations(): Operation[] {
      const offer = random.pick(offers);
      const sameSpace = parties.filter((party) => party.space === offer.seller.space);
      let buyer = random.pick(sameSpace.filter((party) => party !== offer.seller));
      if (random.chance(0.05))
        buyer = offer.seller; // buying your own capability: 4030
      else if (random.chance(0.04)) buyer = random.pick(parties.filter((party) => party.space !== offer.seller.space)); // 4040
      const body: Record<string, unknown> = { capability_id: offer.id };
      if (offer.perHour) body.booked_hours = random.int(1, 5);

      const reusable = ofThisEpoch(createsByKey);
      const roll = random.next();
      if (roll < 0.15 && reusable.length > 0) {
        // A client retry: the same key with the same body, by the same buyer.
        const [key, earlier] = random.pick(reusable);
        return [createOperation(key, earlier.buyer, earlier.body, 'create retry')];
      }
      if (buyer.space === 'human' && roll < 0.3) {
        return [
          {
            label: `create without key by ${buyer.name}`,
            run: () => post('/api/v1/transactions', buyer, body),
            after: (response) => {
              if (response.status === 201) createsWithoutKey++;
            },
          },
        ];
      }
      const key = randomUUID();
      createsByKey.set(key, { buyer, body, epoch, responses: [] });
      const operation = createOperation(key, buyer, body, 'create');
      // Sometimes the very same new key is sent twice at once (a retry racing the original).
      return roll > 0.85 ? [operation, createOperation(key, buyer, body, 'create twin')] : [operation];
    }

    function createOperation(key: string, buyer: Party, body: Record<string, unknown>, label: string): Operation {
      return {
        label: `${label} by ${buyer.name} key ${key}`,
        run: () => post('/api/v1/transactions', buyer, body, key),
        after: (response) => createsByKey.get(key)!.responses.push(response),
      };
    }

    type Action = 'freeze' | 'accept' | 'reject' | 'deliver' | 'confirm' | 'cancel' | 'dispute';
    const actions: Action[] = ['freeze', 'accept', 'reject', 'deliver', 'confirm', 'cancel', 'dispute'];
    const buyerActions = new Set<Action>(['freeze', 'confirm', 'cancel', 'dispute']);

    /** The move a cooperative party would most likely make next. */
    function naturalMove(transaction: Known): { action: Action | 'resolve' } {
      switch (transaction.status) {
        case 'pending_freeze':
          return { action: random.chance(0.85) ? 'freeze' : 'cancel' };
        case 'frozen':
          return { action: random.pick(['accept', 'accept', 'accept', 'reject', 'cancel'] as const) };
        case 'accepted':
          return { action: random.pick(['deliver', 'deliver', 'deliver', 'reject', 'cancel'] as const) };
        case 'delivered':
          return { action: random.pick(['confirm', 'confirm', 'dispute'] as const) };
        case 'disputed':
          return { action: 'resolve' };
        default:
          return { action: random.pick(actions) };
      }
    }

    function actionOperations(): Operation[] {
      if (known.length === 0) return [];
      // Mostly transactions still in play, so that many reach the later states.
      const inPlay = known.filter((each) => !terminalStatuses.has(each.status as TransactionStatus));
      const transaction = random.pick(inPlay.length > 0 && random.chance(0.85) ? inPlay : known);
      const natural = random.chance(0.85);
      const { action } = natural ? naturalMove(transaction) : { action: random.chance(0.08) ? ('resolve' as const) : random.pick(actions) };
      let operation: Operation;
      if (action === 'resolve') {
        const outcome = random.pick(['settle', 'refund'] as const);
        operation = withMaybeKey(`resolve ${outcome} ${transaction.id}`, `/api/v1/admin/transactions/${transaction.id}/resolve`, null, { outcome });
      } else {
        let actor = buyerActions.has(action) ? transaction.buyer : transaction.seller;
        if (!natural || random.chance(0.05)) {
          // Sometimes the wrong party: the other side (4030), a stranger or another space (4040).
          actor = random.pick([transaction.buyer, transaction.seller, stranger, ...parties]);
        }
        const body =
          action === 'deliver'
            ? { result_payload: { n: random.int(1, 3) } }
            : action === 'dispute' && random.chance(0.5)
              ? { reason: 'not as described' }
              : undefined;
        operation = withMaybeKey(`${action} ${transaction.id} by ${actor.name}`, `/api/v1/transactions/${transaction.id}/${action}`, actor, body);
      }
      // Now and then the same move twice at once: exactly one of them may win.
      return random.chance(0.1) ? [operation, { ...operation, label: `${operation.label} (twin)` }] : [operation];
    }

    function withMaybeKey(label: string, path: string, actor: Party | null, body: Record<string, unknown> | undefined): Operation {
      const roll = random.next();
      if (roll < 0.5) return { label, run: () => post(path, actor, body) };
      const key = randomUUID();
      const run = () => post(path, actor, body, key);
      actionKeys.set(key, { run, epoch, responses: [] });
      return { label: `${label} key ${key}`, run, after: (response) => actionKeys.get(key)!.responses.push(response) };
    }

    function retryActionOperation(): Operation[] {
      const entries = ofThisEpoch(actionKeys);
      if (entries.length === 0) return [];
      const [key, entry] = random.pick(entries);
      return [{ label: `action retry key ${key}`, run: entry.run, after: (response) => entry.responses.push(response) }];
    }

    function creditOperations(): Operation[] {
      const reusable = ofThisEpoch(creditKeys);
      if (reusable.length > 0 && random.chance(0.3)) {
        const [key, earlier] = random.pick(reusable);
        return [creditOperation(key, earlier)];
      }
      const party = random.pick(parties);
      const entry: CreditEntry = {
        userId: party.userId,
        amount: randomPrice(100, 5000),
        currency: party.space === 'agent' ? 'UT' : 'CNY',
        epoch,
        responses: [],
      };
      const key = randomUUID();
      creditKeys.set(key, entry);
      return [creditOperation(key, entry)];
    }

    function creditOperation(key: string, entry: CreditEntry): Operation {
      return {
        label: `credit ${format(entry.amount)} key ${key}`,
        run: () => post('/api/v1/admin/wallet/credit', null, { user_id: entry.userId, currency: entry.currency, amount: format(entry.amount) }, key),
        after: (response) => entry.responses.push(response),
      };
    }

    async function refreshKnown() {
      const rows: { id: string; status: string }[] = await db('transactions').select('id', 'status');
      const statusOf = new Map(rows.map((row) => [row.id, row.status]));
      for (const transaction of known) transaction.status = statusOf.get(transaction.id) ?? transaction.status;
    }

    // --- The workload: 20 batches of about 25 concurrent operations. ---
    const batches = 20;
    for (let batch = 0; batch < batches; batch++) {
      const sweeping = batch === batches / 2;
      if (sweeping) {
        // The random workload confirms most deliveries soon, so it may reach the jump with none
        // left; these make sure the sweeper and the buyers always have due deliveries to race for.
        for (const offer of offers.slice(4, 6)) {
          const buyer = parties.find((party) => party.space === 'agent' && party !== offer.seller)!;
          await credit(test, buyer.userId, format(offer.unitPrice));
          credited.set(buyer.userId, credited.get(buyer.userId)! + offer.unitPrice);
          const key = randomUUID();
          const body = { capability_id: offer.id };
          const created = await post('/api/v1/transactions', buyer, body, key).expect(201);
          createsByKey.set(key, { buyer, body, epoch, responses: [created] });
          const { id } = created.body.data as { id: string };
          for (const [actor, action] of [
            [buyer, 'freeze'],
            [offer.seller, 'accept'],
            [offer.seller, 'deliver'],
          ] as const) {
            await act(test, actor, id, action, action === 'deliver' ? { result_payload: { n: 0 } } : undefined).expect(200);
          }
          known.push({ id, buyer, seller: offer.seller, status: 'delivered' });
        }
        // Halfway, three days pass: delivery deadlines lapse (buyers may cancel accepted
        // orders), disputes come too late, and the sweeper settles due deliveries while
        // buyers confirm the same ones.
        test.clock.advanceMs(73 * hoursMs);
        epoch++;
      }
      const operations: Operation[] = [];
      while (operations.length < 25) {
        const roll = random.next();
        if (roll < 0.22 || known.length < 5) operations.push(...createOperations());
        else if (roll < 0.86) operations.push(...actionOperations());
        else if (roll < 0.92) operations.push(...retryActionOperation());
        else operations.push(...creditOperations());
      }
      // Every delivery made before the jump is due now; the sweeper and the buyers' confirms race
      // for them, and each is settled by exactly one of the two.
      const due: string[] = sweeping
        ? await db('transactions').where({ status: 'delivered' }).where('auto_confirm_at', '<=', test.runtime.engine.dependencies.now()).pluck('id')
        : [];
      const [responses, swept] = await Promise.all([
        Promise.all(operations.map((operation) => operation.run())),
        sweeping ? test.runtime.engine.sweeper.runOnce() : Promise.resolve(0),
      ]);
      if (sweeping) {
        const dueIds = new Set(due);
        const settledByBuyers = responses.filter(
          (response) =>
            response.status === 200 &&
            response.headers['idempotent-replayed'] !== 'true' &&
            dueIds.has(response.body.data?.id) &&
            response.body.data?.status === 'settled',
        ).length;
        expect(await db('transactions').whereIn('id', due).whereNot({ status: 'settled' }).pluck('id')).toEqual([]);
        expect(due.length).toBeGreaterThanOrEqual(2);
        expect(swept).toBe(due.length - settledByBuyers);
        console.log(`money invariants: ${due.length} deliveries due at the sweep, ${swept} settled by the sweeper, ${settledByBuyers} by their buyers`);
      }
      responses.forEach((response, index) => {
        const operation = operations[index]!;
        operation.after?.(response);
        const outcome = { label: operation.label, response };
        outcomes.push(outcome);
        expectDocumented(outcome);
        if (response.status === 201 && response.headers['idempotent-replayed'] !== 'true') {
          const view = response.body.data;
          const buyer = parties.find((party) => party.userId === view.buyer_user_id)!;
          const seller = parties.find((party) => party.userId === view.seller_user_id)!;
          known.push({ id: view.id, buyer, seller, status: view.status });
        }
      });
      await refreshKnown();
    }
    expect(outcomes.length).toBeGreaterThanOrEqual(300);

    // Credits that took effect: exactly one fresh (not replayed) success per key.
    for (const [key, entry] of creditKeys) {
      const fresh = entry.responses.filter((response) => response.status === 200 && response.headers['idempotent-replayed'] !== 'true');
      expect(fresh.length, `credit key ${key}`).toBeLessThanOrEqual(1);
      if (fresh.length === 1) credited.set(entry.userId, credited.get(entry.userId)! + entry.amount);
      for (const response of entry.responses.filter((each) => each.status === 200))
        expect(response.body.data.movement_id).toBe(fresh[0]!.body.data.movement_id);
    }

    // A workload that never got anywhere would prove little.
    const statusCounts = new Map<string, number>();
    for (const transaction of known) statusCounts.set(transaction.status, (statusCounts.get(transaction.status) ?? 0) + 1);
    const codeCounts = new Map<number, number>();
    for (const { response } of outcomes) codeCounts.set(response.body.code, (codeCounts.get(response.body.code) ?? 0) + 1);
    console.log(
      `money invariants: ${outcomes.length} requests; statuses ${JSON.stringify(Object.fromEntries(statusCounts))}; codes ${JSON.stringify(Object.fromEntries(codeCounts))}`,
    );
    expect(statusCounts.get('settled') ?? 0).toBeGreaterThan(0);
    expect(codeCounts.get(4020) ?? 0).toBeGreaterThan(0);

    // ---------------------------------------------------------------- the books, in SQL
    type AccountRow = { id: string; kind: string; owner_user_id: string | null; currency: string; available: string; frozen: string };
    const accounts: AccountRow[] = await db('accounts').select('id', 'kind', 'owner_user_id', 'currency', 'available', 'frozen');
    const transactions: {
      id: string;
      buyer_user_id: string;
      seller_user_id: string;
      currency: string;
      price: string;
      status: string;
      event_sequence: number;
    }[] = await db('transactions').select('id', 'buyer_user_id', 'seller_user_id', 'currency', 'price', 'status', 'event_sequence');

    // Every currency sums to exactly zero over all accounts, external and platform fee included.
    for (const currency of ['UT', 'CNY']) {
      const total = accounts
        .filter((account) => account.currency === currency)
        .reduce((sum, account) => sum + BigInt(account.available) + BigInt(account.frozen), 0n);
      expect(total, `sum of ${currency}`).toBe(0n);
    }

    // No user or fee account is negative, in either bucket.
    for (const account of accounts) {
      expect(BigInt(account.frozen), `frozen of ${account.id}`).toBeGreaterThanOrEqual(0n);
      if (account.kind !== 'external') expect(BigInt(account.available), `available of ${account.id}`).toBeGreaterThanOrEqual(0n);
    }

    // Each user's frozen is exactly the sum of its open holds, per currency.
    for (const account of accounts.filter((each) => each.kind === 'user')) {
      const holds = transactions
        .filter((row) => row.buyer_user_id === account.owner_user_id && row.currency === account.currency && openStatuses.includes(row.status))
        .reduce((sum, row) => sum + BigInt(row.price), 0n);
      expect(BigInt(account.frozen), `frozen of user ${account.owner_user_id} ${account.currency}`).toBe(holds);
    }

    // Replaying the ledger in id order reproduces every balance_after and every final balance.
    const entries: {
      id: string;
      movement_id: string;
      account_id: string;
      currency: string;
      bucket: 'available' | 'frozen';
      type: string;
      amount: string;
      balance_after: string;
      biz_ref_id: string | null;
    }[] = await db('ledger_entries')
      .orderBy('id')
      .select('id', 'movement_id', 'account_id', 'currency', 'bucket', 'type', 'amount', 'balance_after', 'biz_ref_id');
    const running = new Map<string, bigint>();
    for (const entry of entries) {
      const bucketKey = `${entry.account_id}:${entry.bucket}`;
      const after = (running.get(bucketKey) ?? 0n) + BigInt(entry.amount);
      running.set(bucketKey, after);
      expect(BigInt(entry.balance_after), `balance_after of ledger entry ${entry.id}`).toBe(after);
    }
    for (const account of accounts) {
      expect(running.get(`${account.id}:available`) ?? 0n, `replayed available of ${account.id}`).toBe(BigInt(account.available));
      expect(running.get(`${account.id}:frozen`) ?? 0n, `replayed frozen of ${account.id}`).toBe(BigInt(account.frozen));
    }

    // Every movement balances per currency.
    const movementSums = new Map<string, bigint>();
    for (const entry of entries)
      movementSums.set(`${entry.movement_id}:${entry.currency}`, (movementSums.get(`${entry.movement_id}:${entry.currency}`) ?? 0n) + BigInt(entry.amount));
    for (const [movement, sum] of movementSums) expect(sum, `movement ${movement}`).toBe(0n);

    // Per transaction, money moved exactly as its final state says: held once while open, paid
    // once (less the fee) when settled, nothing net otherwise.
    const accountOwner = new Map(accounts.map((account) => [account.id, account]));
    for (const row of transactions) {
      const mine = entries.filter((entry) => entry.biz_ref_id === row.id);
      const price = BigInt(row.price);
      const net = (userId: string, bucket: string) =>
        mine
          .filter((entry) => accountOwner.get(entry.account_id)!.owner_user_id === userId && entry.bucket === bucket)
          .reduce((sum, entry) => sum + BigInt(entry.amount), 0n);
      const open = openStatuses.includes(row.status);
      const settled = row.status === 'settled';
      const label = `transaction ${row.id} (${row.status}, ${format(price)})`;
      expect(net(row.buyer_user_id, 'frozen'), `${label}: buyer frozen`).toBe(open ? price : 0n);
      expect(net(row.buyer_user_id, 'available'), `${label}: buyer available`).toBe(open || settled ? -price : 0n);
      expect(net(row.seller_user_id, 'available'), `${label}: seller income`).toBe(settled ? price - feeOf(price) : 0n);
      expect(mine.filter((entry) => entry.type === 'income').length, `${label}: income entries`).toBe(settled && price - feeOf(price) > 0n ? 1 : 0);
      expect(new Set(mine.filter((entry) => entry.type === 'freeze').map((entry) => entry.movement_id)).size, `${label}: freeze movements`).toBeLessThanOrEqual(
        1,
      );
    }

    // What every user sees in its wallet matches a model built from credits and final states.
    const feesByCurrency = new Map<string, bigint>([
      ['UT', 0n],
      ['CNY', 0n],
    ]);
    for (const row of transactions.filter((each) => each.status === 'settled'))
      feesByCurrency.set(row.currency, feesByCurrency.get(row.currency)! + feeOf(BigInt(row.price)));
    for (const party of parties) {
      const currency = party.space === 'agent' ? 'UT' : 'CNY';
      const spent = transactions
        .filter((row) => row.buyer_user_id === party.userId && (openStatuses.includes(row.status) || row.status === 'settled'))
        .reduce((sum, row) => sum + BigInt(row.price), 0n);
      const held = transactions
        .filter((row) => row.buyer_user_id === party.userId && openStatuses.includes(row.status))
        .reduce((sum, row) => sum + BigInt(row.price), 0n);
      const earned = transactions
        .filter((row) => row.seller_user_id === party.userId && row.status === 'settled')
        .reduce((sum, row) => sum + BigInt(row.price) - feeOf(BigInt(row.price)), 0n);
      const wallet = await balance(test, party, party.space === 'agent' ? 'ut' : 'cash');
      expect(wallet, `wallet of ${party.name}`).toEqual({
        available: format(credited.get(party.userId)! - spent + earned),
        frozen: format(held),
        total: format(credited.get(party.userId)! - spent + earned + held),
        currency,
      });
    }
    for (const currency of ['UT', 'CNY']) {
      const fee = accounts.find((account) => account.kind === 'platform_fee' && account.currency === currency)!;
      expect(BigInt(fee.available), `platform fee ${currency}`).toBe(feesByCurrency.get(currency));
    }

    // Each create key had exactly one effect: one fresh success, every success the same id,
    // and as many transactions as keys that succeeded (plus humans' keyless purchases).
    const succeededKeys = new Set<string>();
    for (const [key, entry] of createsByKey) {
      const successes = entry.responses.filter((response) => response.status === 201);
      if (successes.length === 0) continue;
      succeededKeys.add(key);
      expect(new Set(successes.map((response) => response.body.data.id)).size, `create key ${key}`).toBe(1);
      expect(successes.filter((response) => response.headers['idempotent-replayed'] !== 'true').length, `fresh creates for key ${key}`).toBe(1);
    }
    const buyerIds = parties.map((party) => party.userId);
    const counted = await db('transactions').whereIn('buyer_user_id', buyerIds).count<{ count: string }[]>('* as count');
    expect(Number(counted[0]?.count)).toBe(succeededKeys.size + createsWithoutKey);
    expect(transactions.length).toBe(known.length);

    // Each action key had at most one fresh success, and its replays repeat it.
    for (const [key, entry] of actionKeys) {
      const successes = entry.responses.filter((response) => response.status === 200);
      const fresh = successes.filter((response) => response.headers['idempotent-replayed'] !== 'true');
      expect(fresh.length, `action key ${key}`).toBeLessThanOrEqual(1);
      for (const response of successes) expect(response.body.data, `replay of action key ${key}`).toEqual(fresh[0]!.body.data);
    }

    // Event streams: per transaction 1..event_sequence, per user 1..N, no gaps, no repeats.
    const events: {
      transaction_id: string;
      transaction_sequence: number;
      buyer_user_id: string;
      buyer_sequence: string;
      seller_user_id: string;
      seller_sequence: string;
    }[] = await db('outbox_events').select('transaction_id', 'transaction_sequence', 'buyer_user_id', 'buyer_sequence', 'seller_user_id', 'seller_sequence');
    const consecutive = (length: number) => Array.from({ length }, (_, index) => index + 1);
    for (const row of transactions) {
      const sequences = events
        .filter((event) => event.transaction_id === row.id)
        .map((event) => Number(event.transaction_sequence))
        .sort((a, b) => a - b);
      expect(sequences, `events of transaction ${row.id}`).toEqual(consecutive(row.event_sequence));
    }
    const streams: { owner_user_id: string; last_sequence: string }[] = await db('event_streams').select('owner_user_id', 'last_sequence');
    for (const party of [...parties, stranger]) {
      const sequences = [
        ...events.filter((event) => event.buyer_user_id === party.userId).map((event) => Number(event.buyer_sequence)),
        ...events.filter((event) => event.seller_user_id === party.userId).map((event) => Number(event.seller_sequence)),
      ].sort((a, b) => a - b);
      expect(sequences, `event stream of ${party.name}`).toEqual(consecutive(sequences.length));
      const stream = streams.find((each) => each.owner_user_id === party.userId);
      expect(Number(stream?.last_sequence ?? 0), `last_sequence of ${party.name}`).toBe(sequences.length);
    }
  });
});

describe(raceTest('racing for the last of the money'), () => {
  it('twenty concurrent freezes with money for three: three hold, seventeen get 4020', async () => {
    const { buyer, capability } = await agentMarket(test, '37.02', { price_ut: '12.34' });
    const created = await Promise.all(Array.from({ length: 20 }, () => buy(test, buyer, capability.id)));
    const responses = await Promise.all(created.map((transaction) => act(test, buyer, transaction.id, 'freeze')));

    const frozen = responses.filter((response) => response.status === 200);
    const refused = responses.filter((response) => response.status !== 200);
    expect(frozen).toHaveLength(3);
    for (const response of frozen) expect(response.body.data.status).toBe('frozen');
    expect(refused).toHaveLength(17);
    for (const response of refused) {
      expect(response.status, JSON.stringify(response.body)).toBe(402);
      expect(response.body).toMatchObject({ code: 4020, message: 'insufficient_balance', data: { currency: 'UT', available: '0.00', required: '12.34' } });
    }
    expect(await balance(test, buyer)).toEqual({ available: '0.00', frozen: '37.02', total: '37.02', currency: 'UT' });
    const list = await test.http.get('/api/v1/transactions').query({ role: 'buyer', status: 'frozen' }).set(buyer.headers).expect(200);
    expect(list.body.data.total).toBe(3);
    const pending = await test.http.get('/api/v1/transactions').query({ role: 'buyer', status: 'pending_freeze' }).set(buyer.headers).expect(200);
    expect(pending.body.data.total).toBe(17);
  });

  it('twenty concurrent confirms of one delivery: one 200, nineteen 4090, the seller paid once', async () => {
    const { buyer, seller, capability } = await agentMarket(test, '100.00', { price_ut: '40.00' });
    const created = await buy(test, buyer, capability.id);
    await act(test, buyer, created.id, 'freeze').expect(200);
    await act(test, seller, created.id, 'accept').expect(200);
    await act(test, seller, created.id, 'deliver', { result_payload: { done: true } }).expect(200);

    const responses = await Promise.all(Array.from({ length: 20 }, () => act(test, buyer, created.id, 'confirm')));
    const confirmed = responses.filter((response) => response.status === 200);
    expect(confirmed).toHaveLength(1);
    expect(confirmed[0]!.body.data.status).toBe('settled');
    for (const response of responses.filter((each) => each.status !== 200)) {
      expect(response.status, JSON.stringify(response.body)).toBe(409);
      expect(response.body).toMatchObject({ code: 4090, data: { status: 'settled', action: 'confirm' } });
    }
    // 2.5 % of 40.00 is 1.00.
    expect(await balance(test, seller)).toEqual({ available: '39.00', frozen: '0.00', total: '39.00', currency: 'UT' });
    expect(await balance(test, buyer)).toEqual({ available: '60.00', frozen: '0.00', total: '60.00', currency: 'UT' });
    const income = await test.http.get('/api/v1/wallet/transactions').query({ type: 'income' }).set(seller.headers).expect(200);
    expect(income.body.data.total).toBe(1);
    expect(income.body.data.items[0]).toMatchObject({ amount: '39.00', balance_after: '39.00', biz_ref_id: created.id });
  });
});
