import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweeper, type TransactionEngine } from '../../src/engine/money/index.ts';
import { createTaskExpiry, DecideInTransaction } from '../../src/engine/work/index.ts';
import { AppError } from '../../src/errors.ts';
import { limits } from '../../src/limits.ts';
import { createLogger } from '../../src/logger.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { fundedAgent, taskOf } from '../helpers/task-market.ts';

/**
 * The sweeper's expiry of tasks past their deadline, part by part (docs/decisions/money-and-escrow.md
 * "Task money and group commit"): which tasks a sweep picks, what it makes of each answer of the
 * statement (expired, gone because someone else ended the task first, failed, or left to the
 * transaction path), and how the sweeper's run goes on or stops. The races themselves are in
 * test/money/group-commit-task-ends.test.ts and test/work/tasks.test.ts.
 */
let test: TestApp;
beforeAll(async () => {
  test = await startTestApp();
});
afterAll(() => test.close());

const db = () => test.runtime.engine.dependencies.db;

describe('a sweep of due tasks', () => {
  it('picks the earliest due, not those passed over, and answers each by what its statement did', async () => {
    const { dependencies } = test.runtime.engine;
    const owner = await fundedAgent(test, '100.00');
    const soon = (minutes: number) => ({ bounty_amount: '1.00', expires_at: new Date(dependencies.now().getTime() + minutes * 60_000).toISOString() });
    // Due in this order: ok, gone, fails, undecided, closed meanwhile, passed over, and one past the limit.
    const ids = [];
    for (let minute = 1; minute <= 7; minute++) ids.push(await taskOf(test, owner, soon(minute)));
    const [ok, gone, fails, undecided, closedMeanwhile, passedOver, pastLimit] = ids as [string, string, string, string, string, string, string];
    const notDue = await taskOf(test, owner, soon(120));
    test.clock.advanceMs(8 * 60_000);
    const ended: string[] = [];
    const endTask = async (_unit: unknown, viewer: unknown, id: string, action: string): Promise<string> => {
      expect([viewer, action]).toEqual([null, 'expire']);
      if (id === gone) throw new AppError('invalid_state_transition', 'expired by another instance');
      if (id === fails) throw new Error('the statement failed');
      if (id === closedMeanwhile) {
        await db()('tasks').where({ id }).update({ status: 'closed', bounty_held: '0', ended_at: new Date() });
        throw new DecideInTransaction('changed under every attempt');
      }
      if (id === undecided) throw new DecideInTransaction('changed under every attempt');
      return id;
    };
    const { expireDue } = createTaskExpiry(dependencies, endTask as never, (_unit, row) => {
      ended.push(row.id);
      return Promise.resolve();
    });
    const outcomes = await expireDue(6, [passedOver]);
    expect(outcomes.map(({ id, expired, error }) => [id, expired, error === undefined ? null : (error as Error).message])).toEqual([
      [ok, true, null],
      [gone, false, null],
      [fails, false, 'the statement failed'],
      [undecided, true, null],
      [closedMeanwhile, false, null],
      [pastLimit, true, null],
    ]);
    // Only the undecided task, open and past its deadline when locked, was ended on the transaction path.
    expect(ended).toEqual([undecided]);
    expect(outcomes.map((outcome) => outcome.id)).not.toContain(notDue);
  });
});

describe("the sweeper's run of expiries", () => {
  const transactions = { autoConfirmDue: () => Promise.resolve([]), failOverdueInvokes: () => Promise.resolve([]) } as unknown as TransactionEngine;

  /** A sweeper whose sweeps answer `rounds` in turn (then nothing), with the calls it made and its error lines. */
  function scripted(batchSizeMax: number, rounds: { id: string; expired: boolean; error?: unknown }[][]) {
    const calls: [number, string[]][] = [];
    const lines: string[] = [];
    const expiry = {
      expireDue: (limit: number, skipIds: string[]) => {
        calls.push([limit, [...skipIds]]);
        return Promise.resolve(rounds.shift() ?? []);
      },
    };
    const sweeper = createSweeper(
      transactions,
      createLogger('info', (line) => lines.push(line)),
      batchSizeMax,
      undefined,
      expiry,
    );
    return { sweeper, calls, errors: () => lines.filter((line) => line.includes('"level":"error"')) };
  }

  it('asks for what is left of its bound, passes over a failed task, counts only its own expiries and stops at the bound', async () => {
    const { sweeper, calls, errors } = scripted(5, [
      [
        { id: 'a', expired: true },
        { id: 'b', expired: false },
        { id: 'c', expired: true },
        { id: 'f', expired: false, error: new Error('the statement failed') },
      ],
      [
        { id: 'd', expired: true },
        { id: 'e', expired: true },
      ],
      [{ id: 'never', expired: true }],
    ]);
    expect(await sweeper.runOnce()).toBe(4);
    expect(calls).toEqual([
      [5, []],
      [2, ['f']],
    ]);
    expect(errors()).toHaveLength(1);
    expect(errors()[0]).toContain('"id":"f"');
    expect(errors()[0]).toContain('expiry of an open task failed; passing over this row in this run');
  });

  it('asks for at most sweepMovesAtOnceMax at once', async () => {
    const { sweeper, calls } = scripted(1000, []);
    expect(await sweeper.runOnce()).toBe(0);
    expect(calls).toEqual([[limits.sweepMovesAtOnceMax, []]]);
  });

  it('stops when every task of a round was gone, and goes on while some were its own', async () => {
    const allGone = scripted(100, [[{ id: 'a', expired: false }], [{ id: 'b', expired: true }]]);
    expect(await allGone.sweeper.runOnce()).toBe(0);
    expect(allGone.calls).toHaveLength(1);
    const someOwn = scripted(100, [
      [
        { id: 'a', expired: false },
        { id: 'b', expired: true },
      ],
      [{ id: 'c', expired: true }],
      [],
    ]);
    expect(await someOwn.sweeper.runOnce()).toBe(2);
    expect(someOwn.calls).toHaveLength(3);
    // A round with only a failed task goes on too, without it.
    const failedOnly = scripted(100, [[{ id: 'f', expired: false, error: new Error('no') }], [{ id: 'g', expired: true }], []]);
    expect(await failedOnly.sweeper.runOnce()).toBe(1);
    expect(failedOnly.calls.map(([, skipped]) => skipped)).toEqual([[], ['f'], ['f']]);
  });
});
