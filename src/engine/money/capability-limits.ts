import type { Knex } from 'knex';
import { secondsUntilEnd, type UsageWindow, usageWindow } from '../../domain/usage-windows.ts';
import { AppError } from '../../errors.ts';
import { giveBackUsage, takeUsage } from '../../store/capability-usage.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';

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

export async function giveBackCapabilityUsage(executor: Knex, taken: TakenUsage): Promise<void> {
  for (const window of taken.windows) await giveBackUsage(executor, taken.capabilityId, window);
}
