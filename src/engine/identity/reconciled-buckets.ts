import type { Redis } from 'ioredis';
import { limits } from '../../limits.ts';

/**
 * Rate-limit buckets counted in this instance's memory and reconciled with the shared Redis
 * counter in the background (docs/decisions/limits-and-storage.md "Reconciled buckets"), for
 * the buckets whose exactness across instances is not required: a request takes its token here,
 * with no round trip, and what this instance took since the last reconciliation is added to the
 * Redis counter (the key and fixed window rate-limiter-flexible uses, so both kinds count
 * together) every `limits.rateLimitReconcileIntervalMs`, in one pipelined write for every key
 * that took tokens. The answer, the window's total over all instances and its time left,
 * becomes what this instance knows of the others.
 *
 * One instance alone is exact: everything it admitted is in its own count. Across N instances,
 * an instance admits on its own at most `limits.rateLimitUnreconciledShareMax` of a bucket's limit
 * (at least one request) before it waits for a reconciliation, and within that share of the
 * limit it reconciles before each request; so a window admits at most its limit plus that share
 * for each other instance. With Redis unreachable each instance goes on counting alone, as the
 * exact buckets do.
 */
interface Tally {
  /** When the window ends (this instance's clock), aligned to Redis's window after each reconciliation. */
  windowEndsAt: number;
  /** The window's total over all instances at the last reconciliation (this instance's part included). */
  known: number;
  /** Taken here since the last reconciliation was sent. */
  pending: number;
  /** Taken here and being added to Redis right now. */
  inFlight: number;
  /** A new window makes the answer of a reconciliation sent in the old one meaningless. */
  generation: number;
  /** The reconciliation under way for this key, for requests that must wait for it. */
  reconciling: Promise<void> | null;
}

/** Like rate-limiter-flexible's own script: opens the window when the key is new, adds, and says what is left of the window. */
const addScript = `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}`;

type AddCommand = (key: string, points: number, windowSeconds: number) => Promise<[number, number]>;

export interface ReconcilerOptions {
  /** The shared connection; null on the embedded default, where counting here is all there is. */
  redis: Redis | null;
  /** Told of a failed reconciliation (the counts stay here and are sent again with the next). */
  onFailure(error: unknown): void;
  now?: () => number;
}

/** The reconciliation of every reconciled bucket of one instance: one timer, one write per round. */
export function createReconciler({ redis, onFailure, now = Date.now }: ReconcilerOptions) {
  const buckets: ReconciledBucket[] = [];
  let timer: NodeJS.Timeout | null = null;
  let add: AddCommand | null = null;
  if (redis) {
    redis.defineCommand('rateLimitAdd', { numberOfKeys: 1, lua: addScript });
    const command = (redis as unknown as { rateLimitAdd(key: string, points: string, windowSeconds: string): Promise<[number, number]> }).rateLimitAdd;
    add = (key, points, windowSeconds) => command.call(redis, key, String(points), String(windowSeconds));
  }
  const usable = () => add !== null && redis!.status === 'ready';

  function schedule() {
    if (timer !== null || !usable()) return;
    timer = setTimeout(() => {
      timer = null;
      void Promise.all(buckets.flatMap((bucket) => bucket.reconcileDirty()));
    }, limits.rateLimitReconcileIntervalMs);
    timer.unref();
  }

  /**
   * Sends every key's untold tokens and asks for the count of every key in a live window, all in
   * the same tick (one write on the auto-pipelined connection); waits for reconciliations under way
   * first. The background rounds send only the keys that took tokens.
   */
  async function reconcileAll() {
    await Promise.all(buckets.flatMap((bucket) => bucket.inProgress()));
    await Promise.all(buckets.flatMap((bucket) => bucket.reconcileLive()));
  }

  function bucket(redisKeyPrefix: string, points: number, windowSeconds: number): ReconciledBucket {
    const created = createReconciledBucket({
      redisKeyPrefix,
      points,
      windowSeconds,
      shared: redis !== null,
      add: () => (usable() ? add : null),
      schedule,
      onFailure,
      now,
    });
    buckets.push(created);
    return created;
  }

  return {
    bucket,
    /** Reconciles now rather than at the next tick (tests; a stopping instance). */
    reconcileAll,
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;

interface BucketOptions {
  redisKeyPrefix: string;
  points: number;
  windowSeconds: number;
  /** Whether there is a Redis to reconcile with at all (reachable or not). */
  shared: boolean;
  add(): AddCommand | null;
  schedule(): void;
  onFailure(error: unknown): void;
  now(): number;
}

export type ReconciledBucket = ReturnType<typeof createReconciledBucket>;

function createReconciledBucket({ redisKeyPrefix, points: limit, windowSeconds, shared, add, schedule, onFailure, now }: BucketOptions) {
  const tallies = new Map<string, Tally>();
  const dirty = new Set<string>();
  const unreconciledMax = Math.max(1, Math.floor(limit * limits.rateLimitUnreconciledShareMax));
  let generations = 0;
  let sweptAt = 0;

  function tallyOf(key: string, at: number): Tally {
    let tally = tallies.get(key);
    if (tally === undefined || at >= tally.windowEndsAt) {
      tally = { windowEndsAt: at + windowSeconds * 1000, known: 0, pending: 0, inFlight: 0, generation: ++generations, reconciling: null };
      tallies.set(key, tally);
    }
    return tally;
  }

  /**
   * Sends the key's untold tokens (none: only asks) and takes the answer as the window's state. A
   * reconciliation already under way is waited for instead.
   */
  function reconcile(key: string, ask = false): Promise<void> {
    const tally = tallies.get(key);
    const command = add();
    dirty.delete(key);
    if (tally === undefined || command === null) return Promise.resolve();
    if (tally.reconciling !== null) return tally.reconciling;
    if (tally.pending === 0 && !ask) return Promise.resolve();
    const sent = tally.pending;
    const { generation } = tally;
    tally.pending = 0;
    tally.inFlight += sent;
    tally.reconciling = command(`${redisKeyPrefix}:${key}`, sent, windowSeconds).then(
      ([consumed, ttlMs]) => {
        tally.inFlight -= sent;
        tally.reconciling = null;
        if (tally.generation !== generation) return;
        tally.known = Number(consumed);
        tally.windowEndsAt = now() + Number(ttlMs);
        // Tokens taken meanwhile go with the next round.
        if (tally.pending > 0) markDirty(key);
      },
      (error: unknown) => {
        tally.inFlight -= sent;
        tally.reconciling = null;
        // Perhaps counted, perhaps not: counted again rather than lost.
        if (tally.generation === generation) tally.pending += sent;
        markDirty(key);
        onFailure(error);
      },
    );
    return tally.reconciling;
  }

  function markDirty(key: string) {
    if (!shared) return;
    dirty.add(key);
    schedule();
  }

  function sweep(at: number) {
    if (at - sweptAt < 1_000) return;
    sweptAt = at;
    for (const [key, tally] of tallies) if (at >= tally.windowEndsAt && tally.reconciling === null && !dirty.has(key)) tallies.delete(key);
  }

  return {
    /**
     * Whether the request must hear from the other instances before it is judged (then it waits
     * for `reconcile(key)`): this instance has admitted on its own all it may, or the window is
     * within that much of its limit. A window the others already spent is refused without asking.
     */
    mustReconcile(key: string, points: number): boolean {
      const tally = tallies.get(key);
      if (tally === undefined || add() === null || now() >= tally.windowEndsAt || tally.known + points > limit) return false;
      const untold = tally.pending + tally.inFlight + points;
      return untold > unreconciledMax || tally.known + untold > limit - unreconciledMax;
    },
    reconcile: (key: string) => reconcile(key, true),
    /** How long until the window ends if `points` more would exceed the limit, else null (nothing is taken). */
    refusedForMs(key: string, points: number): number | null {
      const at = now();
      const tally = tallyOf(key, at);
      return tally.known + tally.inFlight + tally.pending + points > limit ? tally.windowEndsAt - at : null;
    },
    take(key: string, points: number) {
      const at = now();
      tallyOf(key, at).pending += points;
      markDirty(key);
      sweep(at);
    },
    giveBack(key: string, points: number) {
      const tally = tallies.get(key);
      if (tally) tally.pending = Math.max(0, tally.pending - points);
    },
    /** Reconciliations for every key that took tokens since its last one. */
    reconcileDirty(): Promise<void>[] {
      return [...dirty].map((key) => reconcile(key));
    },
    /** Reconciliations for every key whose window is live, whether it took tokens or not. */
    reconcileLive(): Promise<void>[] {
      const at = now();
      return [...tallies].filter(([, tally]) => at < tally.windowEndsAt).map(([key]) => reconcile(key, true));
    },
    inProgress(): Promise<void>[] {
      return [...tallies.values()].flatMap((tally) => (tally.reconciling ? [tally.reconciling] : []));
    },
  };
}
