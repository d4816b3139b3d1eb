import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withSingleStatement } from '../../src/db/transaction.ts';
import type { Principal } from '../../src/engine/common/index.ts';
import { createTransitions, newTransactionRow, planFreezeCharge, type Transitions } from '../../src/engine/money/index.ts';
import type { CapabilityRow } from '../../src/store/capabilities.ts';
import { type Actor, createAgent, createApiKey } from '../helpers/actors.ts';
import { type OwnedAgent, budgetOf, ownedAgent, setBudget } from '../helpers/agent-budgets.ts';
import { raceTest, startTestApp, type TestApp, usingRealBackends } from '../helpers/app.ts';
import { checkBooks } from '../helpers/books.ts';
import { balance, createCapability, credit } from '../helpers/market.ts';

/**
 * Group commit of freezes charged to agent budgets (docs/decisions/money-and-escrow.md "Group
 * commit and agent budgets"): the budget's take is part of the freeze's one statement, so budgeted
 * freezes share batches with the others; a take the day's bound refuses writes nothing of its
 * change (4021 naming what is left) while the rest of the batch commits, and no key is ever
 * charged beyond its day.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const format = (minor: bigint) => `${minor / 100n}.${String(minor % 100n).padStart(2, '0')}`;

/** A person's agent key with 100.00, and `count` pending purchases of 1.00 it made before any budget. */
async function budgetedBuyer(capabilityId: string, count: number) {
  const agent = await ownedAgent(test);
  await credit(test, agent.userId, '100.00');
  return { agent, pending: await pendingOver(agent, capabilityId, count) };
}

async function pendingOver(buyer: Actor, capabilityId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const created = await test.http.post('/api/v1/transactions').set(buyer.headers).set('Idempotency-Key', randomUUID()).send({ capability_id: capabilityId });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    ids.push(created.body.data.id as string);
  }
  return ids;
}

describe('budgeted freezes in known batches', () => {
  const principalOf = (agent: OwnedAgent): Principal => ({
    user_id: agent.userId,
    caller_type: 'agent',
    platform: 'claude_code',
    api_key_id: agent.apiKeyId,
    budget_key_id: agent.apiKeyId,
  });
  const plainPrincipal = (actor: Actor): Principal => ({ user_id: actor.userId, caller_type: 'agent', platform: 'custom_mcp', api_key_id: null });

  /** Pending purchases written by `transitions` itself, so that its row cache lets every move go without a read. */
  async function pendingCached(transitions: Transitions, principal: Principal, capabilityId: string, count: number) {
    const { dependencies } = test.runtime.engine;
    const capability = (await dependencies.db('capabilities').where({ id: capabilityId }).first()) as CapabilityRow;
    const rows = [];
    for (let index = 0; index < count; index++) {
      rows.push(
        await withSingleStatement(dependencies.db, (unit) =>
          transitions.insert(unit, newTransactionRow(principal, { capability_id: capabilityId }, capability, 100n, dependencies.now(), 0)),
        ),
      );
    }
    return rows.map((row) => row.id);
  }

  it('one take per key and batch: the refused ones alone get 4021 with what is left, the others of their batch commit', async () => {
    const { dependencies } = test.runtime.engine;
    const transitions = createTransitions(dependencies, { publish: () => {}, flush: async () => {}, close: async () => {} });
    const key = await createApiKey(test);
    const capability = await createCapability(test, await createAgent(test, key), { price_ut: '1.00' });
    const keys = await Promise.all([ownedAgent(test), ownedAgent(test), ownedAgent(test)]);
    const plain = await Promise.all([createAgent(test, key), createAgent(test, key), createAgent(test, key)]);
    for (const buyer of [...keys, ...plain]) await credit(test, buyer.userId, '100.00');
    // A: two of three fit; B: one of three; C: no daily bound (only per_purchase_max).
    const budgets = [{ daily_max: '2.00' }, { daily_max: '1.50' }, { per_purchase_max: '5.00' }];
    for (const [index, agent] of keys.entries()) await setBudget(test, agent.person, agent.apiKeyId, budgets[index]!).expect(200);
    const budgeted = await Promise.all(keys.map((agent) => pendingCached(transitions, principalOf(agent), capability.id, 3)));
    const unbudgeted = await Promise.all(plain.map((actor) => pendingCached(transitions, plainPrincipal(actor), capability.id, 1)));
    const charges = await Promise.all(
      budgeted.map((ids, index) => Promise.all(ids.map((id) => planFreezeCharge(dependencies.db, principalOf(keys[index]!), id, dependencies.now())))),
    );
    const before = transitions.batchStats();

    const freeze = (principal: Principal, id: string, budget?: Awaited<ReturnType<typeof planFreezeCharge>>) =>
      withSingleStatement(dependencies.db, (unit) => transitions.move(unit, id, 'freeze', { principal }, budget ? { budget } : {}));
    const answers = await Promise.allSettled([
      ...budgeted.flatMap((ids, index) => ids.map((id, each) => freeze(principalOf(keys[index]!), id, charges[index]![each]))),
      ...unbudgeted.flatMap((ids, index) => ids.map((id) => freeze(plainPrincipal(plain[index]!), id))),
    ]);

    const outcome = (answer: PromiseSettledResult<unknown>) =>
      answer.status === 'fulfilled' ? 'frozen' : (answer.reason as { code: number; data: { left_today: string } }).code;
    expect(answers.map(outcome)).toEqual(['frozen', 'frozen', 4021, 'frozen', 4021, 4021, 'frozen', 'frozen', 'frozen', 'frozen', 'frozen', 'frozen']);
    expect((answers[2] as PromiseRejectedResult).reason).toMatchObject({ data: { budget: 'daily', left_today: '0.00', spent_today: '2.00', amount: '1.00' } });
    expect((answers[4] as PromiseRejectedResult).reason).toMatchObject({ data: { budget: 'daily', left_today: '0.50', spent_today: '1.00' } });
    // The first batch has each key's first take and the unbudgeted freezes; a key's second and
    // third takes wait for a batch of their own each, decided on the sum the previous one left.
    const after = transitions.batchStats();
    expect(after.batches - before.batches).toBe(3);
    expect(after.changes - before.changes).toBe(12);
    expect(after.largest).toBeGreaterThanOrEqual(6);
    const spent = await Promise.all(keys.map(async (agent) => (await budgetOf(test, agent.person, agent.apiKeyId))!.spent_today as string));
    expect(spent).toEqual(['2.00', '1.00', '3.00']);
    expect((await Promise.all(keys.map((agent) => balance(test, agent)))).map((each) => each.frozen)).toEqual(['2.00', '1.00', '3.00']);
    // What each frozen purchase was charged is recorded, so its release gives back exactly that.
    const recorded = await dependencies.db('agent_budget_charges').whereIn('ref_id', budgeted.flat()).select('ref_id', 'amount');
    expect(recorded.map((row: { amount: string }) => row.amount)).toEqual(Array<string>(6).fill('100'));
    expect(await checkBooks(dependencies.db)).toEqual([]);
  });

  it(raceTest('two instances batching takes of one key at once: never beyond its day, each refused one 4021'), async () => {
    const { dependencies } = test.runtime.engine;
    const silent = { publish: () => {}, flush: async () => {}, close: async () => {} };
    const instances = [createTransitions(dependencies, silent), createTransitions(dependencies, silent)];
    const capability = await createCapability(test, await createAgent(test), { price_ut: '1.00' });
    const agent = await ownedAgent(test);
    await credit(test, agent.userId, '100.00');
    await setBudget(test, agent.person, agent.apiKeyId, { daily_max: '5.00' }).expect(200);
    const principal = principalOf(agent);
    // Each instance wrote six pending purchases and so moves them without a read: its takes of
    // the key go one batch after the other, racing the other instance's for the same usage row,
    // which none of them has yet.
    const pending = await Promise.all(instances.map((transitions) => pendingCached(transitions, principal, capability.id, 6)));
    const charges = await Promise.all(pending.map((ids) => Promise.all(ids.map((id) => planFreezeCharge(dependencies.db, principal, id, dependencies.now())))));
    const answers = await Promise.allSettled(
      pending.flatMap((ids, instance) =>
        ids.map((id, index) =>
          withSingleStatement(dependencies.db, (unit) => instances[instance]!.move(unit, id, 'freeze', { principal }, { budget: charges[instance]![index]! })),
        ),
      ),
    );
    expect(answers.filter((answer) => answer.status === 'fulfilled')).toHaveLength(5);
    for (const answer of answers.filter((each) => each.status === 'rejected')) {
      expect(answer.reason).toMatchObject({ code: 4021, data: { budget: 'daily', left_today: '0.00', spent_today: '5.00' } });
    }
    expect(await budgetOf(test, agent.person, agent.apiKeyId)).toMatchObject({ spent_today: '5.00', left_today: '0.00' });
    expect(await balance(test, agent)).toMatchObject({ available: '95.00', frozen: '5.00' });
    expect(await checkBooks(dependencies.db)).toEqual([]);
  });
});

describe('many budgeted and unbudgeted freezes at once over HTTP', () => {
  it(raceTest('each answer is right, each key spent what it accepted and never beyond its day, the books balance'), { timeout: 300_000 }, async () => {
    const seller = await createAgent(test);
    const capability = await createCapability(test, seller, { price_ut: '1.00' });
    const dailies = ['3.50', '5.00', '2.00', '0.50'];
    const buyers = await Promise.all(dailies.map(() => budgetedBuyer(capability.id, 6)));
    for (const [index, { agent }] of buyers.entries()) await setBudget(test, agent.person, agent.apiKeyId, { daily_max: dailies[index] }).expect(200);
    const plain = await Promise.all(Array.from({ length: 4 }, () => createAgent(test)));
    for (const actor of plain) await credit(test, actor.userId, '100.00');
    const plainPending = await Promise.all(plain.map((actor) => pendingOver(actor, capability.id, 6)));
    const before = test.runtime.engine.transitions.batchStats();

    const freeze = (buyer: Actor, id: string) => test.http.post(`/api/v1/transactions/${id}/freeze`).set(buyer.headers);
    const [budgetedAnswers, plainAnswers] = await Promise.all([
      Promise.all(buyers.map(({ agent, pending }) => Promise.all(pending.map((id) => freeze(agent, id))))),
      Promise.all(plain.map((actor, index) => Promise.all(plainPending[index]!.map((id) => freeze(actor, id))))),
    ]);

    for (const answers of plainAnswers) expect(answers.map((answer) => answer.status)).toEqual(Array<number>(6).fill(200));
    for (const [index, answers] of budgetedAnswers.entries()) {
      const daily = BigInt(Math.round(Number(dailies[index]) * 100));
      const fits = Number(daily / 100n);
      const accepted = answers.filter((answer) => answer.status === 200);
      expect(accepted).toHaveLength(fits);
      for (const answer of accepted) expect(answer.body.data.status).toBe('frozen');
      for (const refused of answers.filter((answer) => answer.status !== 200)) {
        expect(refused.body).toMatchObject({
          code: 4021,
          data: { budget: 'daily', daily_max: dailies[index], left_today: format(daily - BigInt(fits) * 100n), amount: '1.00' },
        });
      }
      const { agent } = buyers[index]!;
      const budget = await budgetOf(test, agent.person, agent.apiKeyId);
      expect(budget).toMatchObject({ spent_today: format(BigInt(fits) * 100n), left_today: format(daily - BigInt(fits) * 100n) });
      expect(await balance(test, agent)).toMatchObject({ available: format(10_000n - BigInt(fits) * 100n), frozen: format(BigInt(fits) * 100n) });
    }
    expect(await checkBooks(test.runtime.engine.dependencies.db)).toEqual([]);

    // On PostgreSQL the freezes did share statements; the embedded database runs one statement at
    // a time while nothing else runs, so there a batch rarely forms.
    const after = test.runtime.engine.transitions.batchStats();
    if (usingRealBackends()) expect(after.changes - before.changes).toBeGreaterThan(after.batches - before.batches);
    expect(after.changes - before.changes).toBeGreaterThanOrEqual(24 + 10);
  });
});
