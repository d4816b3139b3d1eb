import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions, newTransactionRow, planPurchaseCharge } from '../../src/engine/money/index.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import { InsufficientBalance } from '../../src/store/ledger.ts';
import { type Actor, createAgent } from '../helpers/actors.ts';
import { type OwnedAgent, budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { startCallbackServer } from '../helpers/callback-server.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit for invoke holds (docs/decisions/money-and-escrow.md "Group commit for invoke
 * holds"): an invoke's hold is ONE change, the transaction inserted already frozen with its
 * events, its freeze's legs and its agent budget take, so holds share batches with each other and
 * with every other change. A hold short of money alone is refused 4020 and one over its key's day
 * alone 4021, while the rest of its batch commits; a replayed key answers what the first did.
 */
let test: TestApp;
let callbacks: Awaited<ReturnType<typeof startCallbackServer>>;
beforeAll(async () => {
  callbacks = await startCallbackServer();
  test = await startTestApp({ CALLBACK_ALLOW_PRIVATE: 'true' });
});
afterAll(async () => {
  await test.close();
  await callbacks.close();
});

const silent = { publish: () => {}, flush: async () => {}, close: async () => {} };

const principalOf = (actor: Actor, budgetKeyId?: string): Principal => ({
  user_id: actor.userId,
  caller_type: 'agent',
  platform: 'claude_code',
  api_key_id: budgetKeyId ?? null,
  ...(budgetKeyId ? { budget_key_id: budgetKeyId } : {}),
});

async function fundedOwned(amount: string, budget: Record<string, unknown>): Promise<OwnedAgent> {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, amount);
  await setBudget(test, agent.person, agent.apiKeyId, budget).expect(200);
  return agent;
}

async function fundedPlain(amount: string): Promise<Actor> {
  const actor = await createAgent(test);
  await credit(test, actor.userId, amount);
  return actor;
}

describe('invoke holds in known batches', () => {
  it('holds share one statement; the one over its day alone gets 4021, the one short of money alone fails; the rest commit frozen', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, silent);
    const created = await createCapability(test, await createAgent(test), { price_ut: '1.00', pricing_model: 'per_query', callback_url: callbacks.url('/ok') });
    const capability = (await dependencies.db('capabilities').where({ id: created.id }).first()) as CapabilityRow;
    const [narrow, wide] = [await fundedOwned('100.00', { daily_max: '1.50' }), await fundedOwned('100.00', { daily_max: '5.00' })];
    const [short, rich] = [await fundedPlain('1.50'), await fundedPlain('100.00')];
    const holders = [
      principalOf(narrow, narrow.apiKeyId),
      principalOf(narrow, narrow.apiKeyId),
      principalOf(wide, wide.apiKeyId),
      principalOf(short),
      principalOf(short),
      principalOf(rich),
      principalOf(rich),
    ];
    const at = dependencies.now();
    const rows = holders.map((principal) => ({
      ...newTransactionRow(principal, { capability_id: capability.id }, capability, 100n, at, 0),
      auto_accept: false,
      invoke_deadline: new Date(at.getTime() + 60_000),
    }));
    const charges = await Promise.all(rows.map((row, index) => planPurchaseCharge(dependencies.db, holders[index]!, row, capability, at)));
    expect(charges.map((charge) => charge !== undefined)).toEqual([true, true, true, false, false, false, false]);
    const before = transitions.batchStats();

    const answers = await Promise.allSettled(
      rows.map((row, index) =>
        withSingleStatement(dependencies.db, (unit) =>
          transitions.insertMoved(unit, row, 'freeze', { principal: holders[index]! }, charges[index] ? { budget: charges[index] } : {}),
        ),
      ),
    );

    const outcome = (answer: PromiseSettledResult<unknown>) =>
      answer.status === 'fulfilled' ? 'frozen' : answer.reason instanceof InsufficientBalance ? 'short' : (answer.reason as { code: number }).code;
    const outcomes = answers.map(outcome);
    expect([outcomes[0], outcomes[1], outcomes[2], outcomes[5], outcomes[6]]).toEqual(['frozen', 4021, 'frozen', 'frozen', 'frozen']);
    // One of the two holds of 1.00 on 1.50 is written; the statement they shared failed and was split.
    expect([outcomes[3], outcomes[4]].sort()).toEqual(['frozen', 'short']);
    expect((answers[1] as PromiseRejectedResult).reason).toMatchObject({ data: { budget: 'daily', left_today: '0.50', spent_today: '1.00', amount: '1.00' } });
    // The first batch has every hold but the narrow key's second take, which waits for the next.
    const after = transitions.batchStats();
    expect(after.batches - before.batches).toBe(2);
    expect(after.changes - before.changes).toBe(7);
    expect(after.largest).toBeGreaterThanOrEqual(6);
    expect(after.splits - before.splits).toBeGreaterThanOrEqual(1);

    const written = rows.filter((_row, index) => outcomes[index] === 'frozen').map((row) => row.id);
    const stored = await dependencies
      .db('transactions')
      .whereIn(
        'id',
        rows.map((row) => row.id),
      )
      .select('id', 'status', 'event_sequence', 'frozen_at');
    expect(stored.map((row: { id: string }) => row.id).sort()).toEqual([...written].sort());
    for (const row of stored) expect(row).toMatchObject({ status: 'frozen', event_sequence: 2 });
    // Each written hold has its creation and its freeze, numbered 1 and 2.
    const events = await dependencies.db('outbox_events').whereIn('transaction_id', written).orderBy(['transaction_id', 'transaction_sequence']);
    expect(events).toHaveLength(written.length * 2);
    for (const [index, event] of events.entries()) {
      expect(event).toMatchObject({ event_type: index % 2 === 0 ? 'transaction.pending_freeze' : 'transaction.frozen', transaction_sequence: (index % 2) + 1 });
    }
    const recorded = await dependencies.db('agent_budget_charges').whereIn('ref_id', [rows[0]!.id, rows[1]!.id, rows[2]!.id]).select('ref_id', 'amount');
    expect(recorded.map((row: { ref_id: string }) => row.ref_id).sort()).toEqual([rows[0]!.id, rows[2]!.id].sort());
    expect(await budgetOf(test, narrow.person, narrow.apiKeyId)).toMatchObject({ spent_today: '1.00', left_today: '0.50' });
    expect(await budgetOf(test, wide.person, wide.apiKeyId)).toMatchObject({ spent_today: '1.00' });
    expect(await balance(test, short)).toMatchObject({ available: '0.50', frozen: '1.00' });
    expect(await balance(test, rich)).toMatchObject({ available: '98.00', frozen: '2.00' });
    expect(await checkBooks(dependencies.db)).toEqual([]);
  });
});

interface Answer {
  status: number;
  body: { code: number; data: Record<string, unknown> };
}

const invoke = (buyer: Actor, capabilityId: string, key: string = randomUUID()) =>
  test.http
    .post(`/api/v1/capabilities/${capabilityId}/invoke`)
    .set(buyer.headers)
    .set('Idempotency-Key', key)
    .send({ input: { q: key } });

describe('many invokes at once over HTTP', () => {
  it(
    raceTest(
      'each answer is right (settled, 4020, 4021, a replay the same), the settled ones are the answered ones, the books balance, the holds were batched',
    ),
    { timeout: 300_000 },
    async () => {
      const seller = await createAgent(test);
      const capability = await createCapability(test, seller, { price_ut: '1.00', pricing_model: 'per_query', callback_url: callbacks.url('/ok') });
      const rich = await Promise.all(Array.from({ length: 4 }, () => fundedPlain('100.00')));
      const poor = await Promise.all(Array.from({ length: 2 }, () => fundedPlain('2.50')));
      const dailies = ['3.00', '1.50'];
      const budgeted = await Promise.all(dailies.map((daily) => fundedOwned('100.00', { daily_max: daily })));
      const perBuyer = 6;
      // Three keys of the first rich buyer, each sent three times at once.
      const replayed = Array.from({ length: 3 }, () => randomUUID());
      const before = test.runtime.engine.transitions.batchStats();

      const many = (buyer: Actor) => Promise.all(Array.from({ length: perBuyer }, () => invoke(buyer, capability.id)));
      const [richAnswers, poorAnswers, budgetedAnswers, replayAnswers] = (await Promise.all([
        Promise.all(rich.map(many)),
        Promise.all(poor.map(many)),
        Promise.all(budgeted.map(many)),
        Promise.all(replayed.map((key) => Promise.all([0, 1, 2].map(() => invoke(rich[0]!, capability.id, key))))),
      ])) as unknown as [Answer[][], Answer[][], Answer[][], Answer[][]];

      const settledIds = new Set<string>();
      const expectSettled = (answer: Answer) => {
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body.data).toMatchObject({ status: 'settled', charged_ut: '1.00' });
        settledIds.add(answer.body.data.transaction_id as string);
      };
      for (const answers of richAnswers) answers.forEach(expectSettled);
      for (const answers of poorAnswers) {
        // 2.50 buys two; the others are refused with the balance as it is then, nothing held.
        const accepted = answers.filter((answer) => answer.status === 200);
        expect(accepted).toHaveLength(2);
        accepted.forEach(expectSettled);
        for (const refused of answers.filter((answer) => answer.status !== 200)) {
          expect(refused.status).toBe(402);
          expect(refused.body).toMatchObject({ code: 4020, data: { currency: 'UT', available: '0.50', required: '1.00' } });
        }
      }
      for (const [index, answers] of budgetedAnswers.entries()) {
        const fits = Math.floor(Number(dailies[index]));
        const accepted = answers.filter((answer) => answer.status === 200);
        expect(accepted).toHaveLength(fits);
        accepted.forEach(expectSettled);
        const left = (Number(dailies[index]) - fits).toFixed(2);
        for (const refused of answers.filter((answer) => answer.status !== 200)) {
          expect(refused.status).toBe(402);
          expect(refused.body).toMatchObject({ code: 4021, data: { budget: 'daily', daily_max: dailies[index], left_today: left, amount: '1.00' } });
        }
        const agent = budgeted[index]!;
        expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ spent_today: `${fits}.00`, left_today: left });
      }
      for (const answers of replayAnswers) {
        // One key, one purchase: the three requests answer the same transaction, called once.
        answers.forEach(expectSettled);
        expect(new Set(answers.map((answer) => answer.body.data.transaction_id)).size).toBe(1);
        expect(answers.map((answer) => answer.body.data.result)).toEqual(Array(3).fill(answers[0]!.body.data.result));
      }
      // A replay afterwards answers exactly what the first request did.
      const again = (await invoke(rich[0]!, capability.id, replayed[0])) as unknown as Answer;
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(replayAnswers[0]![0]!.body.data);

      const succeeded = 4 * perBuyer + 2 * 2 + 3 + 1 + replayed.length;
      expect(settledIds.size).toBe(succeeded);
      // Every transaction of the capability is one of the answered ones, settled; a refused hold wrote none.
      const { db } = test.runtime.engine.dependencies;
      const rows = (await db('transactions').where({ capability_id: capability.id }).select('id', 'status')) as { id: string; status: string }[];
      expect(rows.map((row) => row.id).sort()).toEqual([...settledIds].sort());
      expect(rows.every((row) => row.status === 'settled')).toBe(true);
      expect(callbacks.received.filter((call) => call.body.includes(capability.id))).toHaveLength(succeeded);

      for (const buyer of rich.slice(1)) expect(await balance(test, buyer)).toMatchObject({ available: '94.00', frozen: '0.00' });
      expect(await balance(test, rich[0]!)).toMatchObject({ available: '91.00', frozen: '0.00' });
      for (const buyer of poor) expect(await balance(test, buyer)).toMatchObject({ available: '0.50', frozen: '0.00' });
      expect((await balance(test, seller)).available).toBe(`${succeeded}.00`);
      // No balance below zero (the external account, where credits come from, is the one allowed to be).
      const [negative] = await db('accounts').whereRaw("kind <> 'external' AND (available < 0 OR frozen < 0)").count({ count: '*' });
      expect(Number(negative!.count)).toBe(0);
      expect(await checkBooks(db)).toEqual([]);

      // Every hold and every outcome went through the batcher; on PostgreSQL they shared statements.
      // The embedded database runs one statement at a time while nothing else runs, so there a
      // batch rarely forms.
      const after = test.runtime.engine.transitions.batchStats();
      expect(after.changes - before.changes).toBeGreaterThanOrEqual(2 * succeeded);
      if (usingRealBackends()) expect(after.changes - before.changes).toBeGreaterThan(after.batches - before.batches);
    },
  );
});
