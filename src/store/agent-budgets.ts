import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';

/**
 * Agent budgets as rows (migration 040): the budget of a key, what the key was charged per UTC
 * day, and what each purchase or task was charged, so that a release gives back exactly that.
 * Plain functions of a knex handle: the engine runs them in the database transaction of the
 * freeze or hold they go with (engine/money/budgets.ts).
 */
export interface AgentBudgetRow {
  api_key_id: string;
  currency: string;
  per_purchase_max: string | null;
  daily_max: string | null;
  categories: string[] | null;
  capability_ids: string[] | null;
  updated_at: Date;
}

export interface UsageKey {
  keyId: string;
  currency: string;
  day: string;
}

export const findAgentBudget = async (db: Knex, keyId: string): Promise<AgentBudgetRow | undefined> =>
  (await prepared<AgentBudgetRow>(db, 'SELECT * FROM agent_budgets WHERE api_key_id = ?', [keyId]))[0];

export async function saveAgentBudget(db: Knex, row: AgentBudgetRow): Promise<AgentBudgetRow> {
  const values = { ...row, categories: jsonOrNull(row.categories), capability_ids: jsonOrNull(row.capability_ids) };
  const [saved] = (await db('agent_budgets').insert(values).onConflict('api_key_id').merge().returning('*')) as AgentBudgetRow[];
  return saved!;
}

const jsonOrNull = (list: string[] | null) => (list === null ? null : JSON.stringify(list));

export async function deleteAgentBudget(db: Knex, keyId: string): Promise<void> {
  await db('agent_budgets').where({ api_key_id: keyId }).del();
}

/**
 * Adds `amount` to the day's usage of a key, in one compare-and-set upsert that refuses when the
 * sum would pass `dailyMax` (null: no bound). Answers what the day's usage is now, or null when
 * refused (nothing taken). The row is locked until the caller's database transaction ends, so a
 * parallel charge of the same key waits and is then decided on the sum this one left.
 */
export async function takeBudgetUsage(db: Knex, usage: UsageKey, amount: bigint, dailyMax: bigint | null): Promise<bigint | null> {
  const bound = dailyMax === null ? null : String(dailyMax);
  const rows = await prepared<{ spent: string }>(
    db,
    `INSERT INTO agent_budget_usage (api_key_id, currency, day, spent)
       SELECT ?, ?, ?, ?::bigint WHERE ?::bigint IS NULL OR ?::bigint <= ?::bigint
     ON CONFLICT (api_key_id, currency, day) DO UPDATE SET spent = agent_budget_usage.spent + excluded.spent
       WHERE ?::bigint IS NULL OR agent_budget_usage.spent + excluded.spent <= ?::bigint
     RETURNING spent`,
    [usage.keyId, usage.currency, usage.day, String(amount), bound, String(amount), bound, bound, bound],
  );
  return rows[0] ? BigInt(rows[0].spent) : null;
}

/** What a key was charged on a day (0 when nothing). */
export async function spentOn(db: Knex, usage: UsageKey): Promise<bigint> {
  const [row] = await prepared<{ spent: string }>(db, 'SELECT spent FROM agent_budget_usage WHERE api_key_id = ? AND currency = ? AND day = ?', [
    usage.keyId,
    usage.currency,
    usage.day,
  ]);
  return BigInt(row?.spent ?? 0);
}

/** What several keys were charged on a day, for the key list. */
export async function spentByKeys(db: Knex, keyIds: string[], day: string): Promise<Map<string, bigint>> {
  if (keyIds.length === 0) return new Map();
  const rows = (await db('agent_budget_usage').whereIn('api_key_id', keyIds).where({ day }).select('api_key_id', 'currency', 'spent')) as {
    api_key_id: string;
    currency: string;
    spent: string;
  }[];
  return new Map(rows.map((row) => [`${row.api_key_id}:${row.currency}`, BigInt(row.spent)]));
}

export async function budgetsOfKeys(db: Knex, keyIds: string[]): Promise<AgentBudgetRow[]> {
  if (keyIds.length === 0) return [];
  return (await db('agent_budgets').whereIn('api_key_id', keyIds)) as AgentBudgetRow[];
}

/** Records that `refId` (a transaction or a task) was charged `amount` to the key on that day. */
export async function recordCharge(db: Knex, refId: string, usage: UsageKey, amount: bigint): Promise<void> {
  await prepared(
    db,
    `INSERT INTO agent_budget_charges (ref_id, api_key_id, currency, day, amount) VALUES (?, ?, ?, ?, ?::bigint)
     ON CONFLICT (ref_id, api_key_id, currency, day) DO UPDATE SET amount = agent_budget_charges.amount + excluded.amount`,
    [refId, usage.keyId, usage.currency, usage.day, String(amount)],
  );
}

/**
 * Gives back everything `refId` was charged, to the day each part was charged to, in one
 * statement (a purchase released: cancel, reject, fail, refund; a task's hold ended).
 */
export async function giveBackAll(db: Knex, refId: string): Promise<void> {
  await prepared(
    db,
    `WITH charge AS (DELETE FROM agent_budget_charges WHERE ref_id = ? RETURNING api_key_id, currency, day, amount)
     UPDATE agent_budget_usage AS usage SET spent = GREATEST(usage.spent - charge.amount, 0)
       FROM charge WHERE usage.api_key_id = charge.api_key_id AND usage.currency = charge.currency AND usage.day = charge.day`,
    [refId],
  );
}

interface ChargeRow {
  api_key_id: string;
  currency: string;
  day: string;
  amount: string;
}

/** Gives back at most `amount` of what `refId` was charged, the latest day first (a bounty lowered). */
export async function giveBackPart(db: Knex, refId: string, amount: bigint): Promise<void> {
  let left = amount;
  const charges = (await db('agent_budget_charges').where({ ref_id: refId }).orderBy('day', 'desc').forUpdate()) as ChargeRow[];
  for (const charge of charges) {
    if (left <= 0n) break;
    const part = BigInt(charge.amount) < left ? BigInt(charge.amount) : left;
    left -= part;
    const row = db('agent_budget_charges').where({ ref_id: refId, api_key_id: charge.api_key_id, currency: charge.currency, day: charge.day });
    await (part === BigInt(charge.amount) ? row.del() : row.update({ amount: db.raw('amount - ?::bigint', [String(part)]) }));
    await db('agent_budget_usage')
      .where({ api_key_id: charge.api_key_id, currency: charge.currency, day: charge.day })
      .update({ spent: db.raw('GREATEST(spent - ?::bigint, 0)', [String(part)]) });
  }
}

/** A task's charges become its transaction's when an application is accepted (the hold becomes the freeze). */
export async function moveCharges(db: Knex, fromRefId: string, toRefId: string): Promise<void> {
  await db('agent_budget_charges').where({ ref_id: fromRefId }).update({ ref_id: toRefId });
}

/**
 * Deletes the usage and charges of days before `beforeDay` (YYYY-MM-DD), at most `batchSize` rows
 * of each a call: only today's usage is ever read, and a release that late gives back to a day
 * that no longer matters.
 */
export async function pruneBudgetDays(db: Knex, beforeDay: string, batchSize: number): Promise<number> {
  const usage = await prepared<{ day: string }>(
    db,
    `DELETE FROM agent_budget_usage WHERE (api_key_id, currency, day) IN (
       SELECT api_key_id, currency, day FROM agent_budget_usage WHERE day < ? LIMIT ?)
     RETURNING day`,
    [beforeDay, batchSize],
  );
  const charges = await prepared<{ day: string }>(
    db,
    `DELETE FROM agent_budget_charges WHERE (ref_id, api_key_id, currency, day) IN (
       SELECT ref_id, api_key_id, currency, day FROM agent_budget_charges WHERE day < ? LIMIT ?)
     RETURNING day`,
    [beforeDay, batchSize],
  );
  return usage.length + charges.length;
}
