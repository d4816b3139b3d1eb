import type { Knex } from 'knex';
import type { AgentBudgetLimits } from '../domain/agent-budgets.ts';

/** Device authorization queries as plain functions of a knex handle (the database or a transaction). */
export type DeviceAuthorizationStatus = 'pending' | 'approved' | 'denied' | 'redeemed';

export interface DeviceAuthorizationRow {
  id: string;
  device_code_hash: string;
  user_code_hash: string;
  agent_platform_type: string;
  status: DeviceAuthorizationStatus;
  interval_seconds: number;
  last_polled_at: Date | null;
  user_id: string | null;
  api_key_id: string | null;
  created_at: Date;
  expires_at: Date;
  decided_at: Date | null;
  redeemed_at: Date | null;
  /** The agent budget the person chose when approving, given to the key at redemption (migration 040). */
  agent_budget: AgentBudgetLimits | null;
}

const table = 'device_authorizations';

/** False when the user code is taken already (a collision of random codes): the caller draws again. */
export async function insertDeviceAuthorization(
  db: Knex,
  row: Omit<DeviceAuthorizationRow, 'status' | 'last_polled_at' | 'user_id' | 'api_key_id' | 'decided_at' | 'redeemed_at' | 'agent_budget'>,
): Promise<boolean> {
  const inserted = await db(table).insert(row).onConflict('user_code_hash').ignore().returning('id');
  return inserted.length === 1;
}

export const findByDeviceCodeHash = (db: Knex, hash: string) => db<DeviceAuthorizationRow>(table).where({ device_code_hash: hash }).first();
export const findByUserCodeHash = (db: Knex, hash: string) => db<DeviceAuthorizationRow>(table).where({ user_code_hash: hash }).first();

/**
 * Records a poll that kept the interval: it succeeds only if the row is still pending and the
 * previous poll is at least `interval_seconds` less `graceMs` old at `now`, so that of two polls
 * at once only one counts as on time.
 */
export async function claimPoll(db: Knex, id: string, now: Date, graceMs: number): Promise<boolean> {
  const claimed = await db(table)
    .where({ id, status: 'pending' })
    .andWhere((query) => {
      query
        .whereNull('last_polled_at')
        .orWhereRaw(`last_polled_at + interval_seconds * interval '1 second' - ? * interval '1 millisecond' <= ?`, [graceMs, now]);
    })
    .update({ last_polled_at: now })
    .returning('id');
  return claimed.length === 1;
}

/** A poll that came too early: the interval grows by `stepSeconds` up to `maxSeconds` (RFC 8628 slow_down). */
export async function slowDown(db: Knex, id: string, now: Date, stepSeconds: number, maxSeconds: number): Promise<number | null> {
  const [row] = await db(table)
    .where({ id, status: 'pending' })
    .update({ last_polled_at: now, interval_seconds: db.raw('least(interval_seconds + ?, ?)', [stepSeconds, maxSeconds]) })
    .returning('interval_seconds');
  return row ? Number(row.interval_seconds) : null;
}

/** Moves a pending, unexpired request to approved or denied; false when it is no longer pending. */
export async function decide(
  db: Knex,
  id: string,
  decision: 'approved' | 'denied',
  userId: string,
  now: Date,
  budget: AgentBudgetLimits | null = null,
): Promise<boolean> {
  const updated = await db(table)
    .where({ id, status: 'pending' })
    .andWhere('expires_at', '>', now)
    .update({ status: decision, user_id: userId, decided_at: now, agent_budget: budget === null ? null : JSON.stringify(budget) })
    .returning('id');
  return updated.length === 1;
}

/** Takes an approved, unexpired request for redemption; only one caller ever gets the row. */
export async function takeForRedemption(db: Knex, id: string, now: Date): Promise<DeviceAuthorizationRow | undefined> {
  const [row] = await db<DeviceAuthorizationRow>(table)
    .where({ id, status: 'approved' })
    .andWhere('expires_at', '>', now)
    .update({ status: 'redeemed', redeemed_at: now })
    .returning('*');
  return row;
}

export const recordIssuedKey = (db: Knex, id: string, apiKeyId: string) => db(table).where({ id }).update({ api_key_id: apiKeyId });
