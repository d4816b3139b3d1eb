import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';
import { type Leg, type Movement, assertBalanced, movementClauses, shortfallOf } from './ledger.ts';
import { type AcceptanceParts, acceptanceChargeClauses, acceptanceInputClause, applicationClauses } from './change-acceptances.ts';
import type { OutboxRow } from './outbox.ts';
import { type ClaimCompletion, type NumberedClaim, claimClauses, completionClause } from './claims.ts';
import { type BudgetTake, budgetChargedClause, budgetClauses, usageRowOf } from './change-budgets.ts';
import { taskEventClauses, taskEventResultClause, taskEventRowsOf, taskInsertClauses, taskUpdateClauses } from './change-tasks.ts';
import { type NewEvent, eventClauses, firstSequenceOf } from './change-events.ts';
import { columnsOf, patchAssignments } from './change-columns.ts';
import { deadlineClauses } from './change-deadlines.ts';
import { type FreshClaim, type PurchaseCheck, freshPurchaseClauses } from './change-purchases.ts';
import type { NewTaskEvent, TaskEventRow } from './task-events.ts';

export { type AcceptanceParts } from './change-acceptances.ts';
export { type BudgetTake, usageRowOf } from './change-budgets.ts';
export { type NewEvent } from './change-events.ts';
export { type FreshClaim, type PurchaseCheck } from './change-purchases.ts';

/**
 * State changes of marketplace transactions as ONE SQL statement: the writes to the transaction
 * rows (an insert for create, a compare-and-set update for a move), the balance updates, the
 * ledger entries, the parties' stream counters, the outbox events and the idempotency
 * completions, chained as data-modifying CTEs, one multi-row statement per kind of row. Each
 * change's parts after its row write run only if that write matched, so a lost compare-and-set
 * changes nothing of that change, and the other changes of the statement are written. One change
 * alone is a statement of the same form; engine/money/batcher.ts gathers concurrent changes into one.
 * A task published with its bounty held, new or a draft, is such a change too (change-tasks.ts):
 * the task row instead of a transaction's, its events in the task outbox.
 *
 * Why one statement: a move used to be BEGIN, SELECT, UPDATE, account UPDATEs, ledger INSERT,
 * outbox INSERT, COMMIT: up to eight round trips, each costing the server's only thread more than
 * PostgreSQL's work did. One statement is one round trip, and outside an explicit transaction it
 * is its own atomic commit: one commit for all its changes. Row locks are taken in one fixed
 * order, the same in every change statement (PostgreSQL runs the CTEs the final SELECT reads
 * first, the others at the end), each kind in sorted order: the idempotency advisory locks and
 * claim rows, the idempotency keys purchases insert (change-purchases.ts), the transaction rows,
 * the task rows of drafts published (change-tasks.ts), the agent budgets' usage rows
 * (change-budgets.ts), the stream counters, the accounts, then the task stream counters
 * (change-tasks.ts). Two statements therefore never wait for each other in a circle (a key two
 * instances insert at once makes the second wait for the first's commit while it holds only
 * claims and keys sorted before that one, which the first has already passed). The
 * transactions' deadline rows (change-deadlines.ts) are written and deleted only by the statement
 * that holds the transaction's row, and the sweeper reads them without a lock: they add no wait.
 */
/**
 * A transaction inserted or moved, or a task inserted open with its bounty held, or a draft moved
 * to open with it by a compare-and-set on its status and version (change-tasks.ts).
 */
export type RowWrite =
  | { kind: 'insert'; values: Record<string, unknown> }
  | { kind: 'update'; fromStatus: string; fromSequence: number; set: Record<string, unknown> }
  | { kind: 'insert_task'; values: Record<string, unknown> }
  | { kind: 'update_task'; fromStatus: string; fromVersion: string; set: Record<string, unknown> };

export interface StateChange {
  /** The row the change writes: a transaction's id, or a task's (insert_task, update_task; its legs refer to it). */
  transactionId: string;
  buyerUserId: string;
  sellerUserId: string;
  write: RowWrite;
  legs: Leg[];
  events: NewEvent[];
  at: Date;
  /** An idempotency claim to complete in the same statement, with the response to store. */
  claim?: ClaimCompletion;
  /**
   * A new transaction decided on a cached read (change-purchases.ts): its key is claimed, completed,
   * by the statement itself, and only if `check` finds the read still true.
   */
  freshClaim?: FreshClaim;
  check?: PurchaseCheck;
  /** An agent budget charge taken in the same statement (a freeze, or an insert already frozen; see budgetClauses). */
  budget?: BudgetTake;
  /** A task's events (its own outbox, numbered per recipient), written with the change. */
  taskEvents?: NewTaskEvent[];
  /** An application accepted: the insert is its transaction's, already frozen (change-acceptances.ts). */
  acceptance?: AcceptanceParts;
}

/**
 * Applied with the outbox rows written; stale when the compare-and-set found the row changed (or a
 * purchase's cached read no longer held); claim_lost when another request took over the
 * idempotency claim; key_taken when a fresh claim's key exists already: nothing was written.
 */
export type ChangeOutcome =
  | { kind: 'applied'; events: OutboxRow[]; taskEvents?: TaskEventRow[] }
  | { kind: 'stale' }
  | { kind: 'claim_lost' }
  | { kind: 'key_taken' }
  | { kind: 'over_budget' };

/** A change with its place in the statement: 1, 2, … in the order given. */
interface Numbered {
  change: StateChange;
  ordinal: number;
}

/**
 * The changes' rows: the compare-and-set updates and the inserts of transactions and of tasks
 * (change-tasks.ts), as `changed` (ordinal, id). The inputs come first, then the agent budgets' takes (they read the locked rows
 * and the inputs), then the writes, which a budgeted change passes only if its take was made.
 */
function writeClauses(numbered: Numbered[], bindings: unknown[]): string[] {
  const updates = numbered.filter(({ change }) => change.write.kind === 'update');
  const inserts = numbered.filter(({ change }) => change.write.kind === 'insert');
  const taskInserts = numbered.filter(({ change }) => change.write.kind === 'insert_task');
  const acceptances = numbered.some(({ change }) => change.acceptance);
  const taskUpdates = acceptances || numbered.some(({ change }) => change.write.kind === 'update_task');
  const budgeted = numbered.some(({ change }) => change.budget);
  // A budgeted change is written only if its take returned (budget_taken).
  const gate = (ordinal: string) =>
    budgeted ? `AND (${ordinal} NOT IN (SELECT ordinal FROM budget_input) OR ${ordinal} IN (SELECT ordinal FROM budget_taken))` : '';
  const reads: string[] = acceptances ? [acceptanceInputClause(numbered, bindings)] : [];
  const writes: string[] = [];
  const sources: string[] = [];
  if (updates.length > 0) {
    const update = updateClauses(updates, bindings, gate('input.ordinal'));
    reads.push(...update.reads);
    writes.push(update.write);
    sources.push('SELECT ordinal, id FROM updated');
  }
  // Before the inserts: an acceptance's transaction insert reads whether its task was matched (task_updated).
  if (taskUpdates) {
    const task = taskUpdateClauses(numbered, bindings);
    reads.push(...task.reads);
    writes.push(task.write(gate('input.ordinal')));
    sources.push(task.source);
  }
  if (inserts.length > 0) {
    const columns = columnsOf(inserts.map(({ change }) => (change.write as { values: Record<string, unknown> }).values));
    bindings.push(JSON.stringify(inserts.map(({ change, ordinal }) => ({ ordinal, fields: (change.write as { values: object }).values }))));
    reads.push(
      `insert_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS input(ordinal int, fields jsonb) WHERE input.ordinal IN (SELECT ordinal FROM allowed))`,
    );
    writes.push(`inserted AS (INSERT INTO transactions (${columns.join(', ')})
        SELECT ${columns.map((column) => `fresh.${column}`).join(', ')}
          FROM insert_input CROSS JOIN LATERAL jsonb_populate_record(NULL::transactions, insert_input.fields) AS fresh
         WHERE true ${gate('insert_input.ordinal')} ${acceptances ? acceptedTaskGate : ''}
         ORDER BY insert_input.ordinal RETURNING id)`);
    sources.push("SELECT insert_input.ordinal, inserted.id FROM inserted JOIN insert_input ON (insert_input.fields->>'id')::uuid = inserted.id");
  }
  if (taskInserts.length > 0) {
    const task = taskInsertClauses(taskInserts, bindings);
    reads.push(...task.reads);
    writes.push(task.write(gate('task_insert_input.ordinal')));
    sources.push(task.source);
  }
  // The budget clauses read the locked rows and the inputs and gate the writes: they go between, bound in that order.
  const budget = budgeted
    ? budgetClauses(numbered, bindings, {
        updates: updates.length > 0,
        inserts: inserts.length > 0,
        taskInserts: taskInserts.length > 0,
        taskUpdates,
        acceptances,
      })
    : [];
  return [...reads, ...budget, ...writes, `changed AS (${sources.join(' UNION ALL ')})`];
}

/** An acceptance's transaction is inserted only if its task was matched (change-acceptances.ts). */
const acceptedTaskGate =
  'AND (insert_input.ordinal NOT IN (SELECT ordinal FROM acceptance_input) OR insert_input.ordinal IN (SELECT ordinal FROM task_updated))';

/**
 * The compare-and-set of every move, as one UPDATE: a row is changed only if its status and
 * event_sequence are still those the move was decided on. The rows are locked first, in id order,
 * so two statements never wait for each other in a circle. A column some moves set and others do
 * not is set to itself where the move leaves it alone. `gate` keeps a budgeted move whose take was refused.
 */
function updateClauses(updates: Numbered[], bindings: unknown[], gate: string): { reads: string[]; write: string } {
  const sets = updates.map(({ change }) => (change.write as { set: Record<string, unknown> }).set);
  const assignments = patchAssignments(sets, columnsOf(sets));
  bindings.push(
    JSON.stringify(
      updates.map(({ change, ordinal }) => {
        const write = change.write as Extract<RowWrite, { kind: 'update' }>;
        return {
          ordinal,
          id: change.transactionId,
          from_status: write.fromStatus,
          from_sequence: write.fromSequence,
          bump: change.events.length,
          patch: write.set,
        };
      }),
    ),
  );
  return {
    reads: [
      `update_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS input(ordinal int, id uuid, from_status text, from_sequence int, bump int, patch jsonb)
      WHERE input.ordinal IN (SELECT ordinal FROM allowed))`,
      // `= ANY (ARRAY(...))`: the ids as one array, which the planner looks up by the primary key
      // (a join with the JSON input, which it guesses at 100 rows, would scan the table); the array
      // of locked ids is made before the UPDATE reads any row, so every lock is taken in id order.
      'locked_transactions AS (SELECT id, status, event_sequence FROM transactions WHERE id = ANY (ARRAY(SELECT id FROM update_input)) ORDER BY id FOR NO KEY UPDATE)',
    ],
    write: `updated AS (UPDATE transactions AS target SET ${assignments.join(', ')}, event_sequence = target.event_sequence + input.bump
       FROM update_input AS input CROSS JOIN LATERAL jsonb_populate_record(NULL::transactions, input.patch) AS patched
      WHERE target.id = ANY (ARRAY(SELECT id FROM locked_transactions))
        AND target.id = input.id AND target.status = input.from_status AND target.event_sequence = input.from_sequence
        ${gate}
      RETURNING input.ordinal, target.id)`,
  };
}

/** For a task_event: id, then the recipient in buyer_sequence and its number in seller_sequence. */
interface ResultRow {
  kind: 'held' | 'changed' | 'event' | 'budget_due' | 'budget_taken' | 'task_event' | 'verified' | 'fresh_held';
  ordinal: number;
  position: number | null;
  id: string | null;
  buyer_sequence: string | null;
  seller_sequence: string | null;
}

/** The rows a change writes by compare-and-set or insert: its own, and an acceptance's task. One change per row in a statement. */
export const rowIdsOf = (change: StateChange): string[] => (change.acceptance ? [change.transactionId, change.acceptance.taskId] : [change.transactionId]);

/**
 * Refuses what no statement may write: an unbalanced movement, a change without an event, a
 * transaction twice, or two budget takes of one usage row. A create may take from a budget: an
 * invoke's hold inserts its transaction already frozen (engine/money/transitions.ts insertMoved).
 */
export function assertWritable(changes: StateChange[]) {
  const ids = new Set<string>();
  const usageRows = new Set<string>();
  for (const change of changes) {
    assertBalanced(change.legs);
    if (change.events.length === 0 && !change.taskEvents?.length) throw new Error('a state change without an event');
    for (const id of rowIdsOf(change)) {
      if (ids.has(id)) throw new Error('two changes of one transaction in one statement');
      ids.add(id);
    }
    if (change.acceptance) {
      assertBalanced(change.acceptance.releasedHold);
      if (change.write.kind !== 'insert') throw new Error("an acceptance is its transaction's insert");
    }
    // A fresh claim is a new transaction's alone: nothing else gates its insert once its key is in.
    if (change.freshClaim && (!change.check || change.claim || change.budget || change.write.kind !== 'insert'))
      throw new Error('a fresh claim is for a checked purchase insert without a claim or a budget');
    if (!change.budget) continue;
    if (usageRows.has(usageRowOf(change.budget))) throw new Error('two budget takes of one usage row in one statement');
    usageRows.add(usageRowOf(change.budget));
  }
}

/**
 * Runs the changes as ONE statement on `executor` (the pool, or an open transaction), and answers
 * each change's outcome in the order given. Each change is decided on its own: one whose
 * compare-and-set finds its row changed, or whose claim was taken over, writes nothing and the
 * others are written. A failure of the statement (a balance that would go below zero fails the
 * accounts CHECK constraint, SQLSTATE 23514) writes nothing of any change and is thrown as it
 * came: which change caused it is for the caller to find (engine/money/batcher.ts splits).
 */
export async function commitChanges(executor: Knex, changes: StateChange[]): Promise<ChangeOutcome[]> {
  assertWritable(changes);
  const numbered = changes.map((change, index) => ({ change, ordinal: index + 1 }));
  const budgeted = changes.some((change) => change.budget);
  const acceptances = changes.some((change) => change.acceptance);
  const taskEvents = changes.some((change) => change.taskEvents?.length);
  const claims: NumberedClaim[] = numbered.flatMap(({ change, ordinal }) => (change.claim ? [{ ...change.claim, ordinal }] : []));
  const bindings: unknown[] = [];
  const clauses = claims.length > 0 ? claimClauses(claims, bindings) : [];
  const purchases = numbered.flatMap(({ change, ordinal }) => (change.freshClaim ? [{ freshClaim: change.freshClaim, check: change.check!, ordinal }] : []));
  if (purchases.length > 0) clauses.push(...freshPurchaseClauses(purchases, bindings));
  bindings.push(JSON.stringify(numbered.filter(({ change }) => !change.claim && !change.freshClaim).map(({ ordinal }) => ordinal)));
  clauses.push(
    // A change is written only if it has no claim or its claim is still its request's (or its fresh key went in).
    `allowed AS (SELECT value::int AS ordinal FROM jsonb_array_elements_text(?::jsonb)${claims.length > 0 ? ' UNION ALL SELECT ordinal FROM claim_held' : ''}${
      purchases.length > 0 ? ' UNION ALL SELECT ordinal FROM fresh_held' : ''
    })`,
    ...writeClauses(numbered, bindings),
    ...movementClauses(numbered.flatMap(movementsOf), bindings, 'changed'),
    ...eventClauses(numbered, bindings),
    // The sweeper's deadlines of the states entered and left (change-deadlines.ts).
    ...deadlineClauses(numbered, bindings),
    // A task's events lock their recipients' counters after the accounts (change-tasks.ts).
    ...(taskEvents ? taskEventClauses(numbered, bindings, changes.some((change) => change.legs.length > 0) ? 'balances' : null) : []),
    ...(claims.length > 0 ? [completionClause('changed')] : []),
    ...(acceptances ? [...applicationClauses, ...acceptanceChargeClauses(budgeted)] : budgeted ? [budgetChargedClause] : []),
  );
  // The outcome of every change: whether its claim held, whether it was written, and its events.
  const text = `WITH ${clauses.join(',\n')}
    SELECT 'changed' AS kind, ordinal, NULL::int AS position, NULL::text AS id, NULL::text AS buyer_sequence, NULL::text AS seller_sequence FROM changed
    UNION ALL SELECT 'event', event_input.ordinal, event_input.position, events.id::text, events.buyer_sequence::text, events.seller_sequence::text
      FROM events JOIN event_input ON event_input.transaction_id = events.transaction_id AND event_input.transaction_sequence = events.transaction_sequence
    ${claims.length > 0 ? "UNION ALL SELECT 'held', ordinal, NULL, NULL, NULL, NULL FROM claim_held" : ''}
    ${purchases.length > 0 ? "UNION ALL SELECT 'verified', ordinal, NULL, NULL, NULL, NULL FROM verified UNION ALL SELECT 'fresh_held', ordinal, NULL, NULL, NULL, NULL FROM fresh_held" : ''}
    ${budgeted ? "UNION ALL SELECT 'budget_due', ordinal, NULL, NULL, NULL, NULL FROM budget_due UNION ALL SELECT 'budget_taken', ordinal, NULL, NULL, NULL, NULL FROM budget_taken" : ''}
    ${taskEvents ? `UNION ALL ${taskEventResultClause}` : ''}`;
  return outcomesOf(numbered, await prepared<ResultRow>(executor, text, bindings));
}

/**
 * A change's movements: its legs, referring to its row; an acceptance's hold released first, referring
 * to its task, so that the entries' balance_after read as the transaction path wrote them.
 */
function movementsOf({ change, ordinal }: Numbered): Movement[] {
  const own = { movementId: randomUUID(), legs: change.legs, bizRefId: change.transactionId, at: change.at, ordinal };
  const release = change.acceptance?.releasedHold ?? [];
  if (release.length === 0) return [own];
  return [{ movementId: randomUUID(), legs: release, bizRefId: change.acceptance!.taskId, at: change.at, ordinal }, own];
}

function outcomesOf(numbered: Numbered[], rows: ResultRow[]): ChangeOutcome[] {
  const ordinalsOf = (kind: ResultRow['kind']) => new Set(rows.filter((row) => row.kind === kind).map((row) => row.ordinal));
  const held = ordinalsOf('held');
  const verified = ordinalsOf('verified');
  const freshHeld = ordinalsOf('fresh_held');
  const changed = ordinalsOf('changed');
  const due = ordinalsOf('budget_due');
  const taken = ordinalsOf('budget_taken');
  const taskEventRows = rows
    .filter((row) => row.kind === 'task_event')
    .map((row) => ({ id: row.id!, recipient: row.buyer_sequence!, sequence: row.seller_sequence! }));
  const taskEvents = taskEventRowsOf(numbered, changed, taskEventRows);
  return numbered.map(({ change, ordinal }): ChangeOutcome => {
    if (change.claim && !held.has(ordinal)) return { kind: 'claim_lost' };
    if (change.freshClaim && !freshHeld.has(ordinal)) return verified.has(ordinal) ? { kind: 'key_taken' } : { kind: 'stale' };
    // Its row still matched, so only the day's bound can have kept its take, and the move, from being written.
    if (change.budget && due.has(ordinal) && !taken.has(ordinal)) return { kind: 'over_budget' };
    if (!changed.has(ordinal)) return { kind: 'stale' };
    const events = rows.filter((row) => row.kind === 'event' && row.ordinal === ordinal).sort((a, b) => a.position! - b.position!);
    const applied = events.map((row, index) => outboxRow(change, row, index));
    return change.taskEvents ? { kind: 'applied', events: applied, taskEvents: taskEvents.get(ordinal) ?? [] } : { kind: 'applied', events: applied };
  });
}

/**
 * One change as one statement. Not enough money throws InsufficientBalance, which the engine
 * turns into 4020; nothing of the change is kept then.
 */
export async function commitChange(executor: Knex, change: StateChange): Promise<ChangeOutcome> {
  try {
    const [outcome] = await commitChanges(executor, [change]);
    return outcome!;
  } catch (error) {
    throw shortfallOf(error, change.legs) ?? error;
  }
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
    transaction_sequence: firstSequenceOf(change.write) + index,
    buyer_user_id: change.buyerUserId,
    buyer_sequence: row.buyer_sequence!,
    seller_user_id: change.sellerUserId,
    seller_sequence: row.seller_sequence!,
    event_type: event.type,
    payload: event.payload,
    created_at: change.at,
  };
}
