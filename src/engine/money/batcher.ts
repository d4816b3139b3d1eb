import type { Knex } from 'knex';
import { limits } from '../../limits.ts';
import { type ChangeOutcome, type StateChange, assertWritable, commitChanges, rowIdsOf, usageRowOf } from '../../store/change.ts';
import { type WaitTrialOptions, type WaitTrialStats, createWaitTrials } from './wait-trials.ts';

/**
 * Group commit (docs/decisions/money-and-escrow.md "Group commit"). State changes submitted while
 * a batch is in the database wait in a queue; when it is done, everything waiting (up to
 * moneyBatchChangesMax) goes as the next batch: ONE statement and ONE commit for all of them, one
 * multi-row write per kind of row (store/change.ts). A change that arrives when nothing waits
 * goes at the next turn of the event loop (or after moneyBatchLingerMs), with whatever arrived in
 * the same turn. Under load batches grow by themselves; alone, a change waits for nothing.
 *
 * Callers mostly act in a loop: ask, get the answer, ask again. When a batch is answered while a
 * few changes wait, the callers it answered are about to send their next change, so the waiting
 * changes wait for them (at most moneyBatchRejoinWaitMs, and only while fewer than
 * moneyBatchRejoinBelowChanges wait): one statement for both groups costs the database and the
 * server less per change than two, and the two groups no longer take turns. Whether that pays
 * depends on the machine, so the batcher tries both now and then and keeps the one under which
 * more changes were answered (wait-trials.ts).
 *
 * Each change is still answered on its own: its compare-and-set or its claim may fail while the
 * others are written. When the statement itself fails on something a change brought (a balance
 * that would go below zero, a unique or NOT NULL violation: SQLSTATE classes 22 and 23), nothing
 * of the batch was written: the batch is split and each part tried again, down to the one change
 * that fails, which alone gets the error. A failure of another kind (the connection, a deadlock)
 * is every change's, and each caller retries as it would have without batching. A transaction is
 * in a batch at most once: a second change of it waits for the next batch, since it was decided
 * on a row the first may change.
 *
 * One batcher per instance: instances batch their own changes, and the database (row locks taken
 * in sorted order, the compare-and-set) keeps them correct against each other.
 */
export interface BatcherOptions {
  changesMax: number;
  inFlightMax: number;
  lingerMs: number;
  /** How long waiting changes wait for the callers of the batch just answered (0: never). */
  rejoinWaitMs: number;
  /** They wait only while fewer than this many changes wait. */
  rejoinBelowChanges: number;
  /** The trials that decide whether the wait pays (wait-trials.ts); without them, the batcher always waits. */
  trials?: WaitTrialOptions;
}

export interface BatchStats {
  batches: number;
  changes: number;
  /** Statements run again in parts after a change failed its batch. */
  splits: number;
  largest: number;
  /** Times the waiting changes waited for the callers just answered, and times that wait ran out. */
  rejoins: number;
  rejoinsTimedOut: number;
  /** Times the batcher would have waited but did not: the trials said waiting did not pay, or tried not waiting. */
  rejoinsSkipped: number;
  /** The trials behind that decision, as they stand. */
  trials: WaitTrialStats | null;
  /** How many batches had 1, 2-3, 4-7, 8-15, … changes: keyed by the lower bound. */
  sizes: Record<string, number>;
}

interface Rejoin {
  target: number;
  timer: NodeJS.Timeout;
}

interface Waiting {
  change: StateChange;
  resolve(outcome: ChangeOutcome): void;
  reject(error: unknown): void;
}

const defaults: BatcherOptions = {
  changesMax: limits.moneyBatchChangesMax,
  inFlightMax: limits.moneyBatchesInFlightMax,
  lingerMs: limits.moneyBatchLingerMs,
  rejoinWaitMs: limits.moneyBatchRejoinWaitMs,
  rejoinBelowChanges: limits.moneyBatchRejoinBelowChanges,
  trials: {
    epochMs: limits.moneyBatchWaitTrialEpochMs,
    trialEpochs: limits.moneyBatchWaitTrialEpochs,
    settledMs: limits.moneyBatchWaitSettledMs,
    marginRatio: limits.moneyBatchWaitSwitchMarginRatio,
    trialChangesMin: limits.moneyBatchWaitTrialChangesMin,
    firstTrialAfterChanges: limits.moneyBatchWaitFirstTrialAfterChanges,
  },
};

/** A failure a change of the batch may have brought (data exception, integrity constraint violation). */
export function isChangesOwnFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/** Whether a change takes money from an available balance: only such a change can fail the accounts CHECK. */
const takesMoney = (change: StateChange) => change.legs.some((leg) => leg.bucket === 'available' && leg.amount < 0n);

/**
 * Two parts to try again: the changes that take money apart from the others when the batch has
 * both (a shortfall is then found in the first part alone), else two halves.
 */
export function splitBatch<T extends { change: StateChange }>(batch: T[]): T[][] {
  const taking = batch.filter((waiting) => takesMoney(waiting.change));
  if (taking.length > 0 && taking.length < batch.length) return [taking, batch.filter((waiting) => !takesMoney(waiting.change))];
  const half = Math.ceil(batch.length / 2);
  return [batch.slice(0, half), batch.slice(half)];
}

export function createBatcher(db: Knex, options: BatcherOptions = defaults) {
  const queue: Waiting[] = [];
  let inFlight = 0;
  let scheduled = false;
  /** While set, the queue waits until it holds `target` changes or the timer fires. */
  let rejoin: Rejoin | undefined;
  const trials = options.trials ? createWaitTrials(options.trials, () => performance.now()) : undefined;
  const stats: Omit<BatchStats, 'trials'> = { batches: 0, changes: 0, splits: 0, largest: 0, rejoins: 0, rejoinsTimedOut: 0, rejoinsSkipped: 0, sizes: {} };

  /** Writes `change` with the changes around it; answers its own outcome once the batch committed. */
  function submit(change: StateChange): Promise<ChangeOutcome> {
    return new Promise((resolve, reject) => {
      // A change no statement may write is refused alone, before it can fail a batch.
      assertWritable([change]);
      queue.push({ change, resolve, reject });
      if (rejoin === undefined) schedule(options.lingerMs);
      else if (queue.length >= rejoin.target) endRejoin(rejoin, false);
    });
  }

  function schedule(waitMs: number) {
    if (scheduled || queue.length === 0 || inFlight >= options.inFlightMax) return;
    scheduled = true;
    const go = () => {
      scheduled = false;
      dispatch();
    };
    if (waitMs > 0) setTimeout(go, waitMs);
    else setImmediate(go);
  }

  function dispatch() {
    while (queue.length > 0 && inFlight < options.inFlightMax) {
      const batch = take();
      inFlight++;
      record(batch.length);
      // write() answers every failure of its statement itself, so it does not reject; were it ever
      // to, the batch must still leave the in-flight count, or no batch would go again.
      void write(batch).then(
        (waitingWhenAnswered) => afterBatch(batch.length, waitingWhenAnswered),
        () => afterBatch(batch.length, queue.length),
      );
    }
  }

  /**
   * What waited meanwhile goes at once, unless it is a small group and the callers just answered
   * are likely to send their next change within moneyBatchRejoinWaitMs: then it waits for them.
   */
  function afterBatch(answered: number, waitingWhenAnswered: number) {
    inFlight--;
    // Counted before the answers went out: a caller in this process may already have sent its next change.
    const target = Math.min(options.changesMax, waitingWhenAnswered + answered);
    const small = waitingWhenAnswered > 0 && waitingWhenAnswered < options.rejoinBelowChanges;
    // Only with nothing in the database and nothing on its way: then nothing else calls schedule()
    // until the wait ends, and the wait is the only thing holding the queue.
    if (options.rejoinWaitMs > 0 && inFlight === 0 && !scheduled && small && queue.length < target) {
      if (trials && !trials.waits()) {
        stats.rejoinsSkipped++;
        schedule(0);
        return;
      }
      stats.rejoins++;
      const started: Rejoin = { target, timer: setTimeout(() => endRejoin(started, true), options.rejoinWaitMs) };
      rejoin = started;
      return;
    }
    schedule(0);
  }

  function endRejoin(ending: Rejoin, timedOut: boolean) {
    clearTimeout(ending.timer);
    rejoin = undefined;
    if (timedOut) stats.rejoinsTimedOut++;
    schedule(0);
  }

  /**
   * The oldest waiting changes, at most one per transaction or task (rowIdsOf) and one per agent budget's usage row
   * (a take is decided on the sum the previous one left, which one statement cannot show it); a
   * second one keeps its place in the queue.
   */
  function take(): Waiting[] {
    const batch: Waiting[] = [];
    const ids = new Set<string>();
    const usageRows = new Set<string>();
    for (let index = 0; index < queue.length && batch.length < options.changesMax;) {
      const waiting = queue[index]!;
      const usageRow = waiting.change.budget ? usageRowOf(waiting.change.budget) : undefined;
      const rows = rowIdsOf(waiting.change);
      if (rows.some((id) => ids.has(id)) || (usageRow !== undefined && usageRows.has(usageRow))) {
        index++;
        continue;
      }
      for (const id of rows) ids.add(id);
      if (usageRow !== undefined) usageRows.add(usageRow);
      batch.push(waiting);
      queue.splice(index, 1);
    }
    return batch;
  }

  function record(size: number) {
    stats.batches++;
    stats.changes += size;
    stats.largest = Math.max(stats.largest, size);
    const bucket = String(2 ** Math.floor(Math.log2(size)));
    stats.sizes[bucket] = (stats.sizes[bucket] ?? 0) + 1;
  }

  /** Writes the batch and answers its changes; returns how many changes waited when it answered them. */
  async function write(batch: Waiting[]): Promise<number> {
    let outcomes: ChangeOutcome[];
    try {
      outcomes = await commitChanges(
        db,
        batch.map((waiting) => waiting.change),
      );
    } catch (error) {
      if (batch.length === 1 || !isChangesOwnFailure(error)) {
        const waitingWhenAnswered = queue.length;
        for (const waiting of batch) waiting.reject(error);
        return waitingWhenAnswered;
      }
      stats.splits++;
      // One part after the other: parts run at once would wait for each other's rows anyway.
      let waitingWhenAnswered = queue.length;
      for (const part of splitBatch(batch)) waitingWhenAnswered = await write(part);
      return waitingWhenAnswered;
    }
    const waitingWhenAnswered = queue.length;
    trials?.answered(batch.length);
    batch.forEach((waiting, index) => waiting.resolve(outcomes[index]!));
    return waitingWhenAnswered;
  }

  return { submit, stats: (): BatchStats => ({ ...structuredClone(stats), trials: trials?.stats() ?? null }) };
}

export type Batcher = ReturnType<typeof createBatcher>;
