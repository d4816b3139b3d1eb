import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';
import type { UsageWindow } from '../domain/usage-windows.ts';

/**
 * Counts of a capability's purchases and invokes per window (migration 011). Taking a unit is one
 * atomic upsert that refuses at the limit, so concurrent buyers on any number of server instances
 * can never take more than the limit between them.
 */
export async function takeUsage(executor: Knex, capabilityId: string, window: UsageWindow, limit: number): Promise<boolean> {
  const rows = await prepared<{ used: number }>(
    executor,
    `INSERT INTO capability_usage (capability_id, window_kind, window_start, used) VALUES (?, ?, ?, 1)
     ON CONFLICT (capability_id, window_kind, window_start) DO UPDATE SET used = capability_usage.used + 1
      WHERE capability_usage.used < ?
     RETURNING used`,
    [capabilityId, window.kind, window.start, limit],
  );
  return rows.length === 1;
}

/** Returns a unit taken by an attempt that then failed, so that it does not count. */
export async function giveBackUsage(executor: Knex, capabilityId: string, window: UsageWindow): Promise<void> {
  await prepared(executor, 'UPDATE capability_usage SET used = used - 1 WHERE capability_id = ? AND window_kind = ? AND window_start = ? AND used > 0', [
    capabilityId,
    window.kind,
    window.start,
  ]);
}

/** Deletes counts of windows that ended before `before`; at most `batchSize` rows a call. */
export async function pruneUsage(executor: Knex, before: Date, batchSize: number): Promise<number> {
  const rows = await prepared<{ capability_id: string }>(
    executor,
    `DELETE FROM capability_usage WHERE (capability_id, window_kind, window_start) IN (
       SELECT capability_id, window_kind, window_start FROM capability_usage WHERE window_start < ? LIMIT ?)
     RETURNING capability_id`,
    [before, batchSize],
  );
  return rows.length;
}
