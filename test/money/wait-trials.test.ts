import { describe, expect, it } from 'vitest';
import { type WaitTrialOptions, createWaitTrials } from '../../src/engine/money/index.ts';

/**
 * The batcher's trials of waiting for the callers a batch answered (engine/money/wait-trials.ts),
 * on a clock the test moves: which choice each epoch tries, what a trial decides from the changes
 * answered under each, and when it decides nothing. How the batcher follows the choice is in
 * test/money/batcher-units.test.ts.
 */
const options: WaitTrialOptions = { epochMs: 100, trialEpochs: 8, settledMs: 10_000, marginRatio: 0.05, trialChangesMin: 100, firstTrialAfterChanges: 0 };

function trialsOnClock(overrides: Partial<WaitTrialOptions> = {}) {
  let clock = 1_000;
  const trials = createWaitTrials({ ...options, ...overrides }, () => clock);
  return {
    trials,
    /** Moves the clock and answers a batch of `count` changes there. */
    answerAt(atMs: number, count: number) {
      clock = atMs;
      trials.answered(count);
    },
  };
}

/**
 * Runs one whole trial from `startMs`: each epoch answers batches of `perBatch(waits)` changes
 * every 10 ms for 100 ms, the choice read before each batch as the batcher reads it.
 */
function runTrial(world: ReturnType<typeof trialsOnClock>, startMs: number, perBatch: (waits: boolean) => number, epochs = 8): number {
  let at = startMs;
  world.answerAt(at, 0);
  for (let epoch = 0; epoch < epochs; epoch++) {
    for (let batch = 0; batch < 10; batch++) {
      at += 10;
      world.answerAt(at, perBatch(world.trials.waits()));
    }
  }
  return at;
}

describe('trials of waiting for the answered callers', () => {
  it('waits before any trial, as the batcher did before it tried', () => {
    const { trials } = trialsOnClock();
    expect(trials.waits()).toBe(true);
    expect(trials.stats()).toMatchObject({ waits: true, trials: 0, switches: 0, lastRates: null });
  });

  it('starts its first trial only once firstTrialAfterChanges changes were answered', () => {
    const world = trialsOnClock({ firstTrialAfterChanges: 30 });
    world.answerAt(1_000, 20);
    world.answerAt(1_200, 9);
    world.answerAt(1_300, 1);
    // 30 answered: the next batch starts the trial, whose first epoch waits and its second does not.
    expect(world.trials.waits()).toBe(true);
    world.answerAt(1_400, 1);
    world.answerAt(1_500, 1);
    expect(world.trials.waits()).toBe(false);
  });

  it('tries waiting, not waiting, not waiting, waiting, epoch by epoch', () => {
    const world = trialsOnClock();
    world.answerAt(1_000, 4);
    const choices: boolean[] = [];
    for (let epoch = 0; epoch < 8; epoch++) {
      choices.push(world.trials.waits());
      world.answerAt(1_000 + (epoch + 1) * 100, 4);
    }
    expect(choices).toEqual([true, false, false, true, true, false, false, true]);
  });

  it('stops waiting when not waiting answered clearly more changes a second, and holds that until the next trial', () => {
    const world = trialsOnClock();
    const end = runTrial(world, 1_000, (waits) => (waits ? 4 : 5));
    expect(world.trials.stats()).toMatchObject({ waits: false, trials: 1, switches: 1, trialsUndecided: 0 });
    expect(world.trials.stats().lastRates).toEqual({ waiting: 400, notWaiting: 500 });
    // Settled: no epochs, the choice holds whatever is answered.
    world.answerAt(end + 5_000, 8);
    expect(world.trials.waits()).toBe(false);
    world.answerAt(end + 9_999, 8);
    expect(world.trials.waits()).toBe(false);
    expect(world.trials.stats().trials).toBe(1);
  });

  it('goes back to waiting when a later trial finds waiting clearly better', () => {
    const world = trialsOnClock();
    const end = runTrial(world, 1_000, (waits) => (waits ? 4 : 5));
    runTrial(world, end + 10_000, (waits) => (waits ? 6 : 5));
    expect(world.trials.stats()).toMatchObject({ waits: true, trials: 2, switches: 2 });
  });

  it('keeps its choice when the other is better by less than the margin', () => {
    const world = trialsOnClock({ marginRatio: 0.3 });
    runTrial(world, 1_000, (waits) => (waits ? 4 : 5));
    expect(world.trials.stats()).toMatchObject({ waits: true, trials: 1, switches: 0, lastRates: { waiting: 400, notWaiting: 500 } });
  });

  it('keeps waiting when both answer the same: an equal trial is no reason to change', () => {
    const world = trialsOnClock({ marginRatio: 0 });
    runTrial(world, 1_000, () => 5);
    expect(world.trials.stats()).toMatchObject({ waits: true, switches: 0 });
  });

  it('decides nothing from a trial with fewer changes than trialChangesMin', () => {
    const world = trialsOnClock({ trialChangesMin: 241 });
    runTrial(world, 1_000, (waits) => (waits ? 2 : 4));
    expect(world.trials.stats()).toMatchObject({ waits: true, trials: 1, trialsUndecided: 1, lastRates: null });
    // With exactly enough changes it decides.
    const enough = trialsOnClock({ trialChangesMin: 240 });
    runTrial(enough, 1_000, (waits) => (waits ? 2 : 4));
    expect(enough.trials.stats()).toMatchObject({ waits: false, trialsUndecided: 0 });
  });

  it('does not count an epoch that spanned an idle gap: that epoch runs again, and the trial goes on', () => {
    const world = trialsOnClock({ trialEpochs: 4, trialChangesMin: 1 });
    world.answerAt(1_000, 0);
    world.answerAt(1_050, 50);
    // No batch for more than four epochs: the callers were idle, not slowed by a choice.
    world.answerAt(1_401, 5);
    expect(world.trials.stats().trials).toBe(0);
    expect(world.trials.waits()).toBe(true);
    world.answerAt(1_501, 10);
    expect(world.trials.waits()).toBe(false);
    world.answerAt(1_601, 20);
    world.answerAt(1_701, 20);
    world.answerAt(1_801, 10);
    // Waiting: 10 + 10 changes in 200 ms; not waiting: 20 + 20 in 200 ms. The 55 around the gap are not counted.
    expect(world.trials.stats()).toMatchObject({ trials: 1, trialsUndecided: 0, switches: 1, waits: false, lastRates: { waiting: 100, notWaiting: 200 } });
  });

  it('counts an epoch exactly epochMs long and one exactly four times as long', () => {
    const world = trialsOnClock({ trialEpochs: 4, trialChangesMin: 1 });
    world.answerAt(1_000, 0);
    world.answerAt(1_100, 10);
    world.answerAt(1_500, 20);
    world.answerAt(1_600, 10);
    expect(world.trials.stats().trials).toBe(0);
    world.answerAt(2_000, 30);
    // Waiting: 10 + 30 changes in 100 + 400 ms; not waiting: 20 + 10 in 400 + 100 ms.
    expect(world.trials.stats()).toMatchObject({ trials: 1, trialsUndecided: 0, lastRates: { waiting: 80, notWaiting: 60 } });
  });
});
