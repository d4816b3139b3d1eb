import type { Knex } from 'knex';
import { limits } from '../limits.ts';
import { isStalePreparedStatement } from './prepared.ts';
import type { Database } from './database.ts';

/**
 * A database transaction plus hooks that run only after COMMIT. Events are published from these
 * hooks, so a change that rolls back can never be announced to subscribers.
 */
export interface UnitOfWork {
  /** An open transaction, or the pool itself when the work writes with one statement. */
  trx: Knex;
  afterCommit(hook: () => void | Promise<void>): void;
  /**
   * Set when single-statement work runs under an idempotency key: its one write statement must
   * also complete this claim (store/change.ts), and says so by setting `completed`.
   */
  claim?: StatementClaim;
  /** The work's first read, already made in the claim's statement (null: no row). */
  prefetched?: Prefetched;
}

export interface Prefetched {
  row: Record<string, unknown> | null;
  /**
   * The row is this instance's cached read, not one just made: the write statement must check
   * that the decision made on it still holds (store/change-purchases.ts).
   */
  cached?: boolean;
}

export interface StatementClaim {
  scopeHash: string;
  token: string;
  /** The advisory lock that tells a retry the original request is still at work. */
  lockId: string;
  responseStatus: number;
  completed: boolean;
  /**
   * A fresh claim: no claim row exists yet; the write statement inserts the key, completed, and
   * writes only if it could (engine/money/idempotency.ts).
   */
  fresh?: { fingerprint: string; createdAt: Date; expiresAt: Date };
}

/**
 * A fresh claim's statement wrote nothing: its key exists already, or the cached read its work
 * decided on no longer holds. The caller decides again through the regular claim, on a row just read.
 */
export class FreshClaimNotWritten extends Error {
  constructor(readonly why: 'key_taken' | 'stale') {
    super(`a fresh claim wrote nothing (${why})`);
  }
}

const retryableSqlStates = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/** Also a prepared statement outdated by a schema change: db/prepared.ts renames it first. */
export function isRetryable(error: unknown): boolean {
  return retryableSqlStates.has((error as { code?: string } | null)?.code ?? '') || isStalePreparedStatement(error);
}

export interface TransactionOptions {
  isolationLevel?: Knex.IsolationLevels;
  onAfterCommitError?: (error: unknown) => void;
}

/**
 * Runs `work` in one transaction, retrying serialization failures and deadlocks a bounded number
 * of times with a small jittered backoff. `work` must therefore be safe to re-run: it may only
 * touch the database through `unit.trx` and register side effects with `afterCommit`.
 */
export function withTransaction<T>(db: Database, work: (unit: UnitOfWork) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const transactionOptions = options.isolationLevel ? { isolationLevel: options.isolationLevel } : undefined;
  return withRetries((afterCommit) => db.transaction((trx) => work({ trx, afterCommit }), transactionOptions), options);
}

/**
 * Runs `work` without an explicit transaction, for work that reads and then writes with ONE
 * statement: PostgreSQL commits a single statement atomically on its own, so BEGIN and COMMIT
 * would only add two round trips. The same retries and afterCommit hooks as withTransaction.
 */
export function withSingleStatement<T>(
  db: Database,
  work: (unit: UnitOfWork) => Promise<T>,
  options: TransactionOptions & { claim?: StatementClaim; prefetched?: Prefetched } = {},
): Promise<T> {
  return withRetries((afterCommit) => work({ trx: db, afterCommit, claim: options.claim, prefetched: options.prefetched }), options);
}

async function withRetries<T>(attempt: (afterCommit: UnitOfWork['afterCommit']) => Promise<T>, options: TransactionOptions): Promise<T> {
  for (let attemptNumber = 0; ; attemptNumber++) {
    const hooks: (() => void | Promise<void>)[] = [];
    try {
      const result = await attempt((hook) => hooks.push(hook));
      await runHooks(hooks, options);
      return result;
    } catch (error) {
      if (!isRetryable(error) || attemptNumber >= limits.transactionRetriesMax) throw error;
      const backoffMs = limits.transactionRetryBackoffMs * 2 ** attemptNumber * (0.5 + Math.random());
      await new Promise((resolve) => setTimeout(resolve, backoffMs));
    }
  }
}

async function runHooks(hooks: (() => void | Promise<void>)[], options: TransactionOptions) {
  for (const hook of hooks) {
    try {
      await hook();
    } catch (error) {
      // The change is committed; a failed hook (for example a publish) is recovered by the
      // outbox relay, so it must not turn a successful request into an error.
      options.onAfterCommitError?.(error);
    }
  }
}
