import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';
import type { Currency, MinorUnits } from '../domain/money.ts';

/**
 * The one ledger writer. Every money movement, an escrow move's legs inside its change statement
 * (store/change.ts) as well as an operator's deposit (applyMovement), is written by the same SQL
 * clauses: lock the accounts in sorted id order, update each once, insert every entry with its
 * exact balance_after. Not enough money is always the accounts CHECK constraint failing the whole
 * statement, reported as one type, InsufficientBalance; no guarded UPDATE skips a row instead.
 * The entries of a movement are inserted by one statement, which is the rule the database's
 * zero-sum trigger relies on (migration 007).
 */
export type Bucket = 'available' | 'frozen';
export type EntryType = 'deposit' | 'freeze' | 'unfreeze' | 'expense' | 'income' | 'fee' | 'refund' | 'withdrawal';

/** One leg of a movement: a signed change to one bucket of one account. */
export interface Leg {
  accountId: string;
  currency: Currency;
  bucket: Bucket;
  amount: MinorUnits;
  type: EntryType;
  description: string;
}

/**
 * A movement would take an available balance below zero. The statement has failed, so the
 * database transaction it ran in is unusable: the engine reads the balance afterwards and either
 * answers 4020 with it or, when the money is there after all, tries again (transactions.act).
 */
export class InsufficientBalance extends Error {
  constructor(
    readonly accountId: string,
    readonly currency: Currency,
    readonly required: MinorUnits,
  ) {
    super('available balance is below the amount to move');
  }
}

export function assertBalanced(legs: Leg[]) {
  const sums = new Map<Currency, bigint>();
  for (const leg of legs) {
    if (leg.amount === 0n) throw new Error('a ledger leg of zero');
    sums.set(leg.currency, (sums.get(leg.currency) ?? 0n) + leg.amount);
  }
  for (const [currency, sum] of sums) if (sum !== 0n) throw new Error(`unbalanced movement in ${currency}: ${sum}`);
}

export interface Movement {
  movementId: string;
  legs: Leg[];
  /** What the movement is for (a marketplace transaction's id), or null. */
  bizRefId: string | null;
  at: Date;
  /** Which change of a statement the movement belongs to (store/change.ts); 1 when it stands alone. */
  ordinal: number;
}

/**
 * Every leg of every movement as one JSON array: the statement reads them with jsonb_to_recordset.
 * Legs are numbered 1, 2, … within their ordinal, across its movements in the order given (an
 * acceptance's release, then its freeze), which is the order of their balance_after.
 */
function legRecords(movements: Movement[]) {
  const legsSoFar = new Map<number, number>();
  const nextLeg = (ordinal: number) => {
    const leg = (legsSoFar.get(ordinal) ?? 0) + 1;
    legsSoFar.set(ordinal, leg);
    return leg;
  };
  return movements.flatMap((movement) =>
    movement.legs.map((leg) => ({
      ordinal: movement.ordinal,
      leg: nextLeg(movement.ordinal),
      movement_id: movement.movementId,
      biz_ref_id: movement.bizRefId,
      account_id: leg.accountId,
      currency: leg.currency,
      bucket: leg.bucket,
      type: leg.type,
      amount: String(leg.amount),
      description: leg.description,
      created_at: movement.at,
    })),
  );
}

/**
 * The CTEs that write movements: `legs`, `locked_accounts`, `balances` (RETURNING id, available,
 * frozen) and `entries`. With `onlyIf`, the name of an earlier CTE with an `ordinal` column, a
 * movement is written only if that CTE returned its ordinal (a change statement's compare-and-set).
 * Each account is updated once for all the movements of the statement; each leg's balance_after
 * is the account's final bucket balance less the legs after it (in the order of ordinal, then
 * leg) in the same account and bucket, so it is exact when one bucket has many legs, and the
 * entries are inserted in that order, so that replaying them by id gives every balance_after.
 */
export function movementClauses(movements: Movement[], bindings: unknown[], onlyIf?: string): string[] {
  if (movements.every((movement) => movement.legs.length === 0)) return [];
  bindings.push(JSON.stringify(legRecords(movements)));
  return [
    `legs AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS leg(ordinal int, leg int, movement_id uuid, biz_ref_id text, account_id uuid, currency text,
        bucket text, type text, amount bigint, description text, created_at timestamptz)
      ${onlyIf ? `WHERE leg.ordinal IN (SELECT ordinal FROM ${onlyIf})` : ''})`,
    `locked_accounts AS (SELECT id FROM accounts WHERE id IN (SELECT account_id FROM legs) ORDER BY id FOR NO KEY UPDATE)`,
    `balances AS (UPDATE accounts AS account
        SET available = account.available + delta.available, frozen = account.frozen + delta.frozen
       FROM (SELECT legs.account_id,
                    COALESCE(sum(legs.amount) FILTER (WHERE legs.bucket = 'available'), 0) AS available,
                    COALESCE(sum(legs.amount) FILTER (WHERE legs.bucket = 'frozen'), 0) AS frozen
               FROM legs JOIN locked_accounts ON locked_accounts.id = legs.account_id GROUP BY legs.account_id) AS delta
      WHERE account.id = delta.account_id
      RETURNING account.id, account.available, account.frozen)`,
    // A leg whose account is missing finds no balance, and the NOT NULL balance_after fails the
    // whole statement: a movement is never written half.
    `entries AS (INSERT INTO ledger_entries (movement_id, account_id, currency, bucket, type, amount, balance_after, description, biz_ref_id, created_at)
      SELECT legs.movement_id, legs.account_id, legs.currency, legs.bucket, legs.type, legs.amount,
             CASE legs.bucket WHEN 'available' THEN balances.available ELSE balances.frozen END
               - COALESCE(sum(legs.amount) OVER (PARTITION BY legs.account_id, legs.bucket ORDER BY legs.ordinal, legs.leg
                                                 ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING), 0),
             legs.description, legs.biz_ref_id, legs.created_at
        FROM legs LEFT JOIN balances ON balances.id = legs.account_id ORDER BY legs.ordinal, legs.leg)`,
  ];
}

const violates = (error: unknown, code: string, constraint: string) => {
  const details = (error ?? {}) as { code?: string; constraint?: string };
  return details.code === code && details.constraint === constraint;
};

/**
 * The InsufficientBalance of a statement that failed on the accounts CHECK constraint, or null
 * for any other error. The constraint does not say which row failed; the account is the one
 * whose available balance the movement takes the most from (a freeze takes from one only).
 */
export function shortfallOf(error: unknown, legs: Leg[]): InsufficientBalance | null {
  if (!violates(error, '23514', 'accounts_available_not_negative')) return null;
  const debits = new Map<string, Leg & { net: bigint }>();
  for (const leg of legs.filter((each) => each.bucket === 'available')) {
    const seen = debits.get(leg.accountId);
    debits.set(leg.accountId, { ...leg, net: (seen?.net ?? 0n) + leg.amount });
  }
  const largest = [...debits.values()].filter((debit) => debit.net < 0n).sort((a, b) => (a.net < b.net ? -1 : a.net > b.net ? 1 : 0))[0];
  if (!largest) return null;
  return new InsufficientBalance(largest.accountId, largest.currency, -largest.net);
}

export type Balances = Map<string, { available: bigint; frozen: bigint }>;

/**
 * Writes a movement that is not part of a state change (an operator's deposit) as one statement
 * of the same clauses, on `executor` (the pool, or an open database transaction). Throws
 * InsufficientBalance when an available balance would go below zero; nothing is written then.
 */
export async function applyMovement(executor: Knex, legs: Leg[], bizRefId: string | null, at: Date): Promise<{ movementId: string; balances: Balances }> {
  assertBalanced(legs);
  if (legs.length === 0) throw new Error('a movement without legs');
  const movementId = randomUUID();
  const bindings: unknown[] = [];
  const clauses = movementClauses([{ movementId, legs, bizRefId, at, ordinal: 1 }], bindings);
  let rows: { id: string; available: string; frozen: string }[];
  try {
    rows = await prepared(
      executor,
      `WITH ${clauses.join(',\n')} SELECT id::text AS id, available::text AS available, frozen::text AS frozen FROM balances`,
      bindings,
    );
  } catch (error) {
    throw shortfallOf(error, legs) ?? error;
  }
  return { movementId, balances: new Map(rows.map((row) => [row.id, { available: BigInt(row.available), frozen: BigInt(row.frozen) }])) };
}
