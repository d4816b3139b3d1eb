import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';
import { type Leg, assertBalanced, movementClauses, shortfallOf } from './ledger.ts';
import type { OutboxRow } from './outbox.ts';
import { type ClaimCompletion, claimClauses, completionClause } from './claims.ts';

/**
 * One state change of a marketplace transaction as ONE SQL statement: the write to the
 * transaction row (an insert for create, a compare-and-set update for a move), the balance
 * updates, the ledger entries, both parties' stream counters and the outbox events, chained as
 * data-modifying CTEs. Every part after the first runs only if the first matched a row, so a lost
 * compare-and-set changes nothing at all.
 *
 * Why one statement: a move used to be BEGIN, SELECT, UPDATE, account UPDATEs, ledger INSERT,
 * outbox INSERT, COMMIT: up to eight round trips, each costing the server's only thread more than
 * PostgreSQL's work did. One statement is one round trip, and outside an explicit transaction it
 * is its own atomic commit. Row locks are taken in one fixed order, the same in every change
 * statement (PostgreSQL runs the CTEs the final SELECT reads first, the others at the end): the
 * idempotency claim row, the transaction row, both stream counters in sorted order, then the
 * accounts in sorted id order.
 */
export interface NewEvent {
  type: string;
  payload: Record<string, unknown>;
}

export type RowWrite =
  { kind: 'insert'; values: Record<string, unknown> } | { kind: 'update'; fromStatus: string; fromSequence: number; set: Record<string, unknown> };

export interface StateChange {
  transactionId: string;
  buyerUserId: string;
  sellerUserId: string;
  write: RowWrite;
  legs: Leg[];
  events: NewEvent[];
  at: Date;
  /** An idempotency claim to complete in the same statement, with the response to store. */
  claim?: ClaimCompletion;
}

/**
 * Applied with the outbox rows written; stale when the compare-and-set found the row changed; or
 * claim_lost when another request took over the idempotency claim, so nothing was written.
 */
export type ChangeOutcome = { kind: 'applied'; events: OutboxRow[] } | { kind: 'stale' } | { kind: 'claim_lost' };

const columnName = /^[a-z_]+$/;

function assertColumns(names: string[]) {
  for (const name of names) if (!columnName.test(name)) throw new Error(`not a column name: ${name}`);
}

/** Objects go to jsonb columns as JSON text; dates, strings, numbers and null go as they are. */
const bindable = (value: unknown) => (value !== null && typeof value === 'object' && !(value instanceof Date) ? JSON.stringify(value) : value);

function writeClause(change: StateChange, bindings: unknown[]): string {
  const { write } = change;
  if (write.kind === 'insert') {
    const columns = Object.keys(write.values);
    assertColumns(columns);
    bindings.push(...columns.map((column) => bindable(write.values[column])));
    const onlyIfClaimed = change.claim ? ' WHERE EXISTS (SELECT 1 FROM claim_held)' : '';
    return `changed AS (INSERT INTO transactions (${columns.join(', ')}) SELECT ${columns.map(() => '?').join(', ')}${onlyIfClaimed} RETURNING id)`;
  }
  const columns = Object.keys(write.set);
  assertColumns(columns);
  bindings.push(...columns.map((column) => bindable(write.set[column])), change.events.length, change.transactionId, write.fromStatus, write.fromSequence);
  const onlyIfClaimed = change.claim ? ' AND EXISTS (SELECT 1 FROM claim_held)' : '';
  return `changed AS (UPDATE transactions SET ${columns.map((column) => `${column} = ?`).join(', ')}, event_sequence = event_sequence + ?
      WHERE id = ? AND status = ? AND event_sequence = ?${onlyIfClaimed} RETURNING id)`;
}

function eventClauses(change: StateChange, firstSequence: number, bindings: unknown[]): string[] {
  const count = change.events.length;
  const records = change.events.map((event, index) => ({ ordinal: index + 1, type: event.type, payload: event.payload }));
  bindings.push(change.buyerUserId, change.sellerUserId, count);
  bindings.push(
    firstSequence - 1,
    change.buyerUserId,
    count,
    change.sellerUserId,
    count,
    change.at,
    change.buyerUserId,
    change.sellerUserId,
    JSON.stringify(records),
  );
  // Left joins: a party without a stream counter row gets a NULL sequence, which the NOT NULL
  // column refuses, failing the whole statement rather than committing a change without its event.
  return [
    `locked_streams AS (SELECT owner_user_id FROM event_streams WHERE owner_user_id IN (?, ?) AND EXISTS (SELECT 1 FROM changed)
      ORDER BY owner_user_id FOR NO KEY UPDATE)`,
    `bumped AS (UPDATE event_streams AS stream SET last_sequence = stream.last_sequence + ?
       FROM locked_streams WHERE stream.owner_user_id = locked_streams.owner_user_id
      RETURNING stream.owner_user_id, stream.last_sequence)`,
    `events AS (INSERT INTO outbox_events (transaction_id, transaction_sequence, buyer_user_id, buyer_sequence, seller_user_id, seller_sequence, event_type, payload, created_at)
      SELECT changed.id, ? + event.ordinal, ?, buyer.last_sequence - ? + event.ordinal, ?, seller.last_sequence - ? + event.ordinal, event.type, event.payload, ?
        FROM changed
        LEFT JOIN bumped AS buyer ON buyer.owner_user_id = ?
        LEFT JOIN bumped AS seller ON seller.owner_user_id = ?
        CROSS JOIN jsonb_to_recordset(?::jsonb) AS event(ordinal int, type text, payload jsonb)
       ORDER BY event.ordinal
      RETURNING id, transaction_sequence, buyer_sequence, seller_sequence)`,
  ];
}

interface ResultRow {
  id: string | null;
  transaction_sequence: number | null;
  buyer_sequence: string | null;
  seller_sequence: string | null;
  claim_held: number;
}

/**
 * Runs the change as one statement on `executor` (the pool, or an open transaction). A balance
 * that would go below zero fails the statement on the accounts CHECK constraint (SQLSTATE 23514),
 * so nothing of the change is kept: it throws InsufficientBalance, which the engine turns into 4020.
 */
export async function commitChange(executor: Knex, change: StateChange): Promise<ChangeOutcome> {
  assertBalanced(change.legs);
  if (change.events.length === 0) throw new Error('a state change without an event');
  const firstSequence = change.write.kind === 'insert' ? 1 : change.write.fromSequence + 1;
  const bindings: unknown[] = [];
  const clauses = [
    // The claim must still be this request's when the change is written, and is completed only if
    // the change was: the claim row is locked before the transaction row is touched.
    ...(change.claim ? claimClauses(change.claim, bindings) : []),
    writeClause(change, bindings),
    ...movementClauses({ movementId: randomUUID(), legs: change.legs, bizRefId: change.transactionId, at: change.at }, bindings, 'changed'),
    ...eventClauses(change, firstSequence, bindings),
    ...(change.claim ? [completionClause(change.claim, bindings, 'changed')] : []),
  ];
  // The outer join returns one row even when nothing was written, to say whether the claim held.
  const text = `WITH ${clauses.join(',\n')}
    SELECT events.id::text AS id, events.transaction_sequence, events.buyer_sequence::text AS buyer_sequence,
           events.seller_sequence::text AS seller_sequence, ${change.claim ? '(SELECT count(*) FROM claim_held)::int' : '1'} AS claim_held
      FROM (SELECT 1) AS one LEFT JOIN events ON true ORDER BY events.transaction_sequence`;
  let rows: ResultRow[];
  try {
    rows = await prepared<ResultRow>(executor, text, bindings);
  } catch (error) {
    throw shortfallOf(error, change.legs) ?? error;
  }
  if (rows[0]?.claim_held === 0) return { kind: 'claim_lost' };
  const written = rows.filter((row) => row.id !== null);
  if (written.length === 0) return { kind: 'stale' };
  return { kind: 'applied', events: written.map((row, index) => outboxRow(change, row, index)) };
}

const violates = (error: unknown, code: string, constraint: string) => {
  const details = (error ?? {}) as { code?: string; constraint?: string };
  return details.code === code && details.constraint === constraint;
};

/** True when two creates raced for the same buyer's client task id (A2A v0.1) and this one lost. */
export const isClientTaskIdTaken = (error: unknown) => violates(error, '23505', 'transactions_buyer_user_id_client_task_id_unique');

function outboxRow(change: StateChange, row: ResultRow, index: number): OutboxRow {
  const event = change.events[index]!;
  return {
    id: row.id!,
    transaction_id: change.transactionId,
    transaction_sequence: Number(row.transaction_sequence),
    buyer_user_id: change.buyerUserId,
    buyer_sequence: row.buyer_sequence!,
    seller_user_id: change.sellerUserId,
    seller_sequence: row.seller_sequence!,
    event_type: event.type,
    payload: event.payload,
    created_at: change.at,
  };
}
