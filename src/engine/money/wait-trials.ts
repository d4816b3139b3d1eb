/**
 * Whether the changes waiting after a batch should wait for the callers that batch answered
 * (engine/money/batcher.ts), decided by trying both on the machine the server runs on
 * (docs/decisions/money-and-escrow.md "Group commit").
 *
 * Waiting merges two groups of callers that would take turns into one statement: it halves the
 * statements' fixed cost (the round trip, the plan, the commit) but idles the database while the
 * answered callers come back. Measured on two machines, it won every pair on one (idle cores, the
 * fixed cost dominant: the case of a database on its own host) and lost most on the other (server
 * and database sharing two busy cores, where two groups taking turns keep both cores working). A
 * model of the two (fixed cost against return time) picked wrong on the second, because the
 * statements' time depends on what else runs at that moment. So the batcher measures the outcome
 * itself: a trial alternates short epochs of waiting and not waiting (in the order wait, not, not,
 * wait, so a steady rise or fall of the load favours neither), counts the changes answered per
 * millisecond under each, and keeps the better until the next trial. It changes to the other only
 * when that one answered clearly more (by marginRatio); a trial with too few changes decides
 * nothing, and an epoch that spanned an idle gap is not counted but runs again. Only the wait is
 * at stake: what is written, and how, is the same either way.
 */
export interface WaitTrialOptions {
  /** Length of one epoch of a trial. */
  epochMs: number;
  /** Epochs in one trial, half waiting and half not (a multiple of four). */
  trialEpochs: number;
  /** How long a trial's choice holds before the next trial. */
  settledMs: number;
  /** The other choice is taken only when its rate is higher than this share above the current one's. */
  marginRatio: number;
  /** A trial that answered fewer changes than this decides nothing. */
  trialChangesMin: number;
  /** The first trial starts once this many changes were answered: a process still warming up would decide on its warm-up. */
  firstTrialAfterChanges: number;
}

export interface WaitTrialStats {
  /** The current choice: wait for the answered callers, or not. */
  waits: boolean;
  trials: number;
  /** Trials that decided nothing: too few changes answered in them. */
  trialsUndecided: number;
  /** Times a trial changed the choice. */
  switches: number;
  /** Changes answered per second under each choice in the last decided trial. */
  lastRates: { waiting: number; notWaiting: number } | null;
}

/** wait, not, not, wait: over every four epochs each choice has an early and a late one. */
const pattern = [true, false, false, true] as const;

interface Tally {
  changes: number;
  ms: number;
}

/** A trial under way: the epoch running, and the changes answered and time spent under each choice. */
interface Trial {
  epoch: number;
  epochStartedAt: number;
  epochChanges: number;
  waiting: Tally;
  notWaiting: Tally;
}

export function createWaitTrials(options: WaitTrialOptions, now: () => number) {
  const stats: WaitTrialStats = { waits: true, trials: 0, trialsUndecided: 0, switches: 0, lastRates: null };
  let trial: Trial | undefined;
  /** No trial starts before this: the last one's choice holds. */
  let settledUntil = -Infinity;
  /** Changes answered before the first trial, counted until there are enough. */
  let answeredBeforeTrials = 0;

  /** A batch answered `count` changes: counted in the epoch running, which may end here. */
  function answered(count: number) {
    const at = now();
    if (!trial) {
      if (answeredBeforeTrials < options.firstTrialAfterChanges) {
        answeredBeforeTrials += count;
        return;
      }
      if (at >= settledUntil) trial = { epoch: 0, epochStartedAt: at, epochChanges: 0, waiting: { changes: 0, ms: 0 }, notWaiting: { changes: 0, ms: 0 } };
      return;
    }
    trial.epochChanges += count;
    const elapsedMs = at - trial.epochStartedAt;
    if (elapsedMs < options.epochMs) return;
    // An epoch that spanned an idle gap says how busy callers were, not which choice is better:
    // it is not counted, and runs again from here.
    if (elapsedMs > 4 * options.epochMs) {
      trial.epochChanges = 0;
      trial.epochStartedAt = at;
      return;
    }
    const tally = pattern[trial.epoch % pattern.length] ? trial.waiting : trial.notWaiting;
    tally.changes += trial.epochChanges;
    tally.ms += elapsedMs;
    trial.epoch++;
    trial.epochChanges = 0;
    trial.epochStartedAt = at;
    if (trial.epoch >= options.trialEpochs) settle(at, trial);
  }

  /** Ends the trial, deciding from what it measured, if it measured enough. */
  function settle(at: number, measured: Trial) {
    trial = undefined;
    stats.trials++;
    settledUntil = at + options.settledMs;
    if (measured.waiting.changes + measured.notWaiting.changes < options.trialChangesMin) {
      stats.trialsUndecided++;
      return;
    }
    const rates = {
      waiting: (measured.waiting.changes / measured.waiting.ms) * 1000,
      notWaiting: (measured.notWaiting.changes / measured.notWaiting.ms) * 1000,
    };
    stats.lastRates = rates;
    const [current, other] = stats.waits ? [rates.waiting, rates.notWaiting] : [rates.notWaiting, rates.waiting];
    if (other > current * (1 + options.marginRatio)) {
      stats.waits = !stats.waits;
      stats.switches++;
    }
  }

  /** Whether to wait now: the epoch's choice during a trial, else the last trial's. */
  function waits(): boolean {
    return trial ? pattern[trial.epoch % pattern.length]! : stats.waits;
  }

  return { answered, waits, stats: (): WaitTrialStats => structuredClone(stats) };
}
