/**
 * The deadlines of a transaction's state in a change statement (store/change.ts): the state that
 * runs one, and the column of the row that says when it passes. The sweeper acts on a passed one
 * (engine/money/transaction-sweeps.ts); the rows live in `transaction_deadlines` so that no index
 * of `transactions` names `status` and a move can be a HOT update
 * (db/migrations/070_transaction_deadlines.ts).
 */
const deadlineOfState: Record<string, { kind: 'auto_confirm' | 'invoke'; column: 'auto_confirm_at' | 'invoke_deadline' }> = {
  delivered: { kind: 'auto_confirm', column: 'auto_confirm_at' },
  frozen: { kind: 'invoke', column: 'invoke_deadline' },
};

interface DeadlineRecord {
  ordinal: number;
  transaction_id: string;
  kind: string;
  due_at: unknown;
  /** The move leaves the state: its deadline ends. Else the write enters it: its deadline starts. */
  ends: boolean;
}

/** The row writes of store/change.ts (RowWrite) as this part reads them: the transactions' insert and move. */
type Write = { kind: 'insert'; values: Record<string, unknown> } | { kind: 'update'; fromStatus: string; set: Record<string, unknown> } | { kind: string };

interface Numbered {
  change: { transactionId: string; write: Write };
  ordinal: number;
}

/** What a change does to deadlines: a move out of a state ends that state's, a write into one with a due time starts it. */
function recordsOf({ change, ordinal }: Numbered): DeadlineRecord[] {
  // A task's insert or move (change-tasks.ts) has no deadlines.
  if (change.write.kind !== 'insert' && change.write.kind !== 'update') return [];
  const write = change.write as Extract<Write, { kind: 'insert' | 'update' }>;
  const after = write.kind === 'insert' ? write.values : write.set;
  const records: DeadlineRecord[] = [];
  const fromStatus = write.kind === 'update' ? write.fromStatus : undefined;
  const left = fromStatus === undefined ? undefined : deadlineOfState[fromStatus];
  if (left && after.status !== undefined && after.status !== fromStatus) {
    records.push({ ordinal, transaction_id: change.transactionId, kind: left.kind, due_at: null, ends: true });
  }
  const entered = typeof after.status === 'string' ? deadlineOfState[after.status] : undefined;
  const dueAt = entered ? after[entered.column] : undefined;
  if (entered && dueAt !== undefined && dueAt !== null)
    records.push({ ordinal, transaction_id: change.transactionId, kind: entered.kind, due_at: dueAt, ends: false });
  return records;
}

/**
 * The clauses that start and end the changes' deadlines, only for changes that were written
 * (`changed`); none when no change of the statement starts or ends one. Only the statement that
 * moves a transaction, holding its row, writes the transaction's deadline rows, and the sweeper
 * reads them without a lock, so they add no wait to the statement's lock order.
 */
export function deadlineClauses(numbered: Numbered[], bindings: unknown[]): string[] {
  const records = numbered.flatMap(recordsOf);
  if (records.length === 0) return [];
  bindings.push(JSON.stringify(records));
  const clauses = [
    `deadline_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS deadline(ordinal int, transaction_id uuid, kind text, due_at timestamptz, ends boolean)
      WHERE deadline.ordinal IN (SELECT ordinal FROM changed))`,
  ];
  if (records.some((record) => !record.ends)) {
    clauses.push(`deadlines_started AS (INSERT INTO transaction_deadlines (transaction_id, kind, due_at)
        SELECT transaction_id, kind, due_at FROM deadline_input WHERE NOT ends ORDER BY transaction_id, kind
      ON CONFLICT (transaction_id, kind) DO UPDATE SET due_at = EXCLUDED.due_at RETURNING transaction_id)`);
  }
  if (records.some((record) => record.ends)) {
    clauses.push(`deadlines_ended AS (DELETE FROM transaction_deadlines AS deadline USING deadline_input AS ended
        WHERE ended.ends AND deadline.transaction_id = ended.transaction_id AND deadline.kind = ended.kind RETURNING deadline.transaction_id)`);
  }
  return clauses;
}
