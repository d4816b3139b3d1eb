/**
 * Agent budget takes inside a change statement (store/change.ts; docs/decisions/money-and-escrow.md
 * "Group commit and agent budgets"): a freeze charged to a person's key takes its amount from the
 * key's usage row of the day in the same statement as the freeze, so that budgeted freezes share
 * group commits with all the others and the take and the freeze commit or fail together.
 */
/**
 * What a change takes from an agent budget's day (engine/money/budgets.ts): `amount` added to the
 * usage row of (key, currency, day) only while the sum stays within `dailyMax` (null: no bound),
 * and recorded as `refId`'s charge so that a release gives back exactly that.
 */
export interface BudgetTake {
  keyId: string;
  currency: string;
  day: string;
  amount: bigint;
  dailyMax: bigint | null;
  refId: string;
}

/** The usage row a budget take moves, as the batcher keeps them apart: one take per row in a statement. */
export const usageRowOf = (take: BudgetTake) => `${take.keyId}:${take.currency}:${take.day}`;

/**
 * The agent budget takes of the moves and of the inserts already frozen (an invoke's hold) (`budget_input`, `budget_due`, `budget_usage`, `budget_taken`; `budget_charged` after the writes).
 * A take is tried only for a move whose claim held and whose row, locked by locked_transactions
 * (which sees its latest version, and keeps it so until the commit), still has the status and
 * sequence the move was decided on: so the UPDATE will match, and a stale move takes nothing. The
 * usage rows are upserted in key order with the compare-and-set `spent + amount <= daily_max`
 * (ON CONFLICT decides on the latest committed row, waiting for a concurrent charge of the key),
 * and a move or insert is written only if its take was (writeClauses). An insert's take is due
 * once its claim held: its row is new, so there is nothing it could have been decided on. The batcher puts at most one take
 * per usage row in a statement, so no row is upserted twice. Lock order: claims, transaction rows,
 * task rows, usage rows, stream counters, accounts.
 */
export function budgetClauses(
  numbered: { change: { budget?: BudgetTake }; ordinal: number }[],
  bindings: unknown[],
  writes: { updates: boolean; inserts: boolean; taskInserts?: boolean; taskUpdates?: boolean; acceptances?: boolean },
): string[] {
  const takes = numbered.flatMap(({ change, ordinal }) => {
    const take = change.budget;
    if (!take) return [];
    const dailyMax = take.dailyMax === null ? null : String(take.dailyMax);
    return [{ ordinal, api_key_id: take.keyId, currency: take.currency, day: take.day, amount: String(take.amount), daily_max: dailyMax, ref_id: take.refId }];
  });
  bindings.push(JSON.stringify(takes));
  const due = [
    ...(writes.updates
      ? [
          `SELECT take.* FROM budget_input AS take
       JOIN update_input AS input ON input.ordinal = take.ordinal
       JOIN locked_transactions AS row ON row.id = input.id AND row.status = input.from_status AND row.event_sequence = input.from_sequence`,
        ]
      : []),
    // A new row has nothing to match: an insert whose claim held (insert_input) is due its take.
    // An acceptance's insert is due as its task's write is, below (change-acceptances.ts): not here too.
    ...(writes.inserts
      ? [
          `SELECT take.* FROM budget_input AS take JOIN insert_input AS input ON input.ordinal = take.ordinal${
            writes.acceptances ? ' WHERE take.ordinal NOT IN (SELECT ordinal FROM acceptance_input)' : ''
          }`,
        ]
      : []),
    // So is a task inserted open with its bounty held (change-tasks.ts).
    ...(writes.taskInserts ? ['SELECT take.* FROM budget_input AS take JOIN task_insert_input AS input ON input.ordinal = take.ordinal'] : []),
    // A task moved (a draft published, a bounty raised) or matched by an acceptance is due its take
    // only if its locked row still matched, as a move's (change-tasks.ts).
    ...(writes.taskUpdates
      ? [
          `SELECT take.* FROM budget_input AS take
       JOIN task_update_input AS input ON input.ordinal = take.ordinal
       JOIN locked_tasks AS row ON row.id = input.id AND row.status = input.from_status AND row.version = input.from_version`,
        ]
      : []),
  ];
  const bound = `(SELECT due.daily_max FROM budget_due AS due
      WHERE due.api_key_id = excluded.api_key_id AND due.currency = excluded.currency AND due.day = excluded.day)`;
  return [
    `budget_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb)
      AS take(ordinal int, api_key_id uuid, currency text, day text, amount bigint, daily_max bigint, ref_id uuid))`,
    `budget_due AS (${due.join(' UNION ALL ')})`,
    `budget_usage AS (INSERT INTO agent_budget_usage (api_key_id, currency, day, spent)
       SELECT api_key_id, currency, day, amount FROM budget_due WHERE daily_max IS NULL OR amount <= daily_max
        ORDER BY api_key_id, currency, day
     ON CONFLICT (api_key_id, currency, day) DO UPDATE SET spent = agent_budget_usage.spent + excluded.spent
       WHERE ${bound} IS NULL OR agent_budget_usage.spent + excluded.spent <= ${bound}
     RETURNING api_key_id, currency, day)`,
    `budget_taken AS (SELECT due.ordinal FROM budget_due AS due
       JOIN budget_usage AS usage ON usage.api_key_id = due.api_key_id AND usage.currency = due.currency AND usage.day = due.day)`,
  ];
}

/** The charge rows of the written moves' budget takes, so that a release gives back exactly those. */
export const budgetChargedClause = `budget_charged AS (INSERT INTO agent_budget_charges (ref_id, api_key_id, currency, day, amount)
       SELECT ref_id, api_key_id, currency, day, amount FROM budget_input WHERE ordinal IN (SELECT ordinal FROM changed)
     ON CONFLICT (ref_id, api_key_id, currency, day) DO UPDATE SET amount = agent_budget_charges.amount + excluded.amount
     RETURNING ref_id)`;
