import type { Knex } from 'knex';
import { secondsUntilEnd, type UsageWindow, usageWindow } from '../../domain/usage-windows.ts';
import { FreshClaimNotWritten } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { giveBackUsage, takeUsage } from '../../store/capability-usage.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import type { TransactionRow } from '../../store/transactions.ts';
import { InsufficientBalance } from '../../store/ledger.ts';
import type { Logger } from '../../logger.ts';

/**
 * A capability's own limits (decisions section 6): `rate_limit_per_min` and `daily_limit` bound
 * its purchases and invokes together, across all buyers and all server instances. The database
 * counts (store/capability-usage.ts) rather than Redis: the count is then exact on every backend
 * and every number of instances. A purchase and an invoke's hold take it before their one write
 * statement and give it back when that is not written (docs/decisions/limits-and-storage.md
 * "A capability's own limits").
 */
export interface TakenUsage {
  capabilityId: string;
  windows: UsageWindow[];
}

type Limited = Pick<CapabilityRow, 'id' | 'rate_limit_per_min' | 'daily_limit'>;

/**
 * Takes one unit of each limit the capability has, or refuses with 4290 (per minute) or 4291
 * (per UTC day) and `retry_after_seconds` until the window that is full ends. A refusal leaves
 * nothing taken.
 */
export async function takeCapabilityUsage(executor: Knex, capability: Limited, at: Date): Promise<TakenUsage> {
  const taken: TakenUsage = { capabilityId: capability.id, windows: [] };
  const checks = [
    {
      limit: capability.rate_limit_per_min,
      window: usageWindow('minute', at),
      error: 'rate_limited' as const,
      detail: `this capability allows ${capability.rate_limit_per_min} purchases or invokes a minute`,
    },
    {
      limit: capability.daily_limit,
      window: usageWindow('day', at),
      error: 'daily_limit_reached' as const,
      detail: `this capability allows ${capability.daily_limit} purchases or invokes a day (UTC)`,
    },
  ];
  for (const check of checks) {
    if (check.limit === null) continue;
    if (!(await takeUsage(executor, capability.id, check.window, check.limit))) {
      await giveBackCapabilityUsage(executor, taken);
      throw new AppError(check.error, check.detail, { retry_after_seconds: secondsUntilEnd(check.window, at), detail: check.detail });
    }
    taken.windows.push(check.window);
  }
  return taken;
}

/** The start of the UTC day whose unit a purchase took, kept on its row (null: it took none). */
export function countedDayOf(taken: TakenUsage): Date | null {
  return taken.windows.find((window) => window.kind === 'day')?.start ?? null;
}

/**
 * A purchase cancelled before it was ever frozen was never paid for: the unit of its day that it
 * took goes back, so that purchases a buyer gave up do not hold the seller's day from everyone
 * else. Only the day it counted in (the minute's window has long ended or soon will), and only if
 * it took one. Run after the cancel committed; a give-back that fails is logged, and the limit
 * then errs on the side of refusing, as everywhere.
 */
export async function giveBackUnpaidDay(executor: Knex, row: Pick<TransactionRow, 'capability_id' | 'counted_day_start'>, log: Logger): Promise<void> {
  if (!row.capability_id || !row.counted_day_start) return;
  try {
    await giveBackUsage(executor, row.capability_id, usageWindow('day', new Date(row.counted_day_start)));
  } catch (error) {
    log.warn('capability usage of an unpaid purchase could not be given back', { capability_id: row.capability_id, error });
  }
}

export async function giveBackCapabilityUsage(executor: Knex, taken: TakenUsage): Promise<void> {
  for (const window of taken.windows) await giveBackUsage(executor, taken.capabilityId, window);
}

/**
 * Whether a failed write certainly wrote nothing: the engine refused it (an AppError: a lost
 * compare-and-set, a claim taken over, the day's budget), a fresh claim's statement found its key
 * or its cached read changed (it answered, writing nothing), the money was short, PostgreSQL
 * answered with an error (the statement is its own transaction: it rolled back), or no connection
 * was ever had. Any other failure, a connection lost while the statement ran, may have lost the
 * answer of a commit. SQLSTATE codes are five digits or capitals and no class starts with E; the
 * socket's codes (EPIPE, ECONNRESET) all do.
 */
export function wroteNothing(error: unknown): boolean {
  if (error instanceof AppError || error instanceof InsufficientBalance || error instanceof FreshClaimNotWritten) return true;
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  return (typeof code === 'string' && /^[0-9A-DF-Z][0-9A-Z]{4}$/.test(code)) || name === 'KnexTimeoutError';
}

/**
 * After the write that was to use `taken` failed with `error`: gives the units back when the write
 * certainly wrote nothing, else keeps them counted (the limit then errs on the side of refusing,
 * never on the side of passing). A give-back that fails is logged, never thrown: the caller's own
 * error is the answer.
 */
export async function giveBackUnlessWritten(executor: Knex, taken: TakenUsage, error: unknown, log: Logger): Promise<void> {
  if (!wroteNothing(error)) {
    log.warn('capability usage kept counted: the write may have committed', { capability_id: taken.capabilityId, error });
    return;
  }
  try {
    await giveBackCapabilityUsage(executor, taken);
  } catch (failure) {
    log.warn('capability usage could not be given back', { capability_id: taken.capabilityId, error: failure });
  }
}
