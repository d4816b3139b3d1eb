import type { TransactionAction } from '../../domain/escrow.ts';
import { withSingleStatement } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import type { EngineDependencies } from '../common/index.ts';
import type { ActionExtra, Transitions } from './transitions.ts';

/** How the sweeper (or a waiting retry) records an invoke whose callback outlived its deadline. */
export const overdueInvoke = {
  latency_ms: null,
  error: 'callback_timeout',
  error_detail: 'the invoke outlived its deadline without an answer',
  result: null,
} as const satisfies ActionExtra['invoke'];

/** What a sweep says of each row it picked: moved by it, gone (moved by someone else first), or the error that failed it. */
export interface SweepOutcome {
  id: string;
  moved: boolean;
  error?: unknown;
}

/**
 * The moves the sweeper makes as the system (sweeper.ts): an auto-confirm, and the failure of an
 * overdue invoke. Up to `limit` due rows are read without a lock and their moves submitted at
 * once, each one change of the batcher (`transitions.move` on the pool), so that they share
 * statements (docs/decisions/money-and-escrow.md "Group commit"). The compare-and-set on the row's
 * status and event_sequence decides which instance or party moves a transaction: another sweeper,
 * the buyer's confirmation or the invoke's late answer that got there first leaves this one a row
 * that is gone (4090 on the row read again), not an error.
 */
export function createTransactionSweeps({ db, now }: Pick<EngineDependencies, 'db' | 'now'>, transitions: Transitions) {
  /** True when this call moved the transaction, false when it was gone (another move came first). */
  async function moveOne(id: string, action: TransactionAction, extra: ActionExtra): Promise<boolean> {
    try {
      await withSingleStatement(db, (unit) => transitions.move(unit, id, action, { system: 'system' }, extra));
      return true;
    } catch (error) {
      if (error instanceof AppError && error.errorName === 'invalid_state_transition') return false;
      throw error;
    }
  }

  /**
   * Moves up to `limit` transactions whose deadline of `kind` has passed while they are still in
   * `status`, not those in `skipIds`. The deadlines are rows of their own (store/change-deadlines.ts),
   * read from their (kind, due_at) index. A failure of the read fails the sweep; a failure of one
   * move is that row's outcome, so the sweeper can pass over it instead of retrying it forever.
   */
  async function sweepDue(
    kind: 'auto_confirm' | 'invoke',
    status: 'delivered' | 'frozen',
    action: TransactionAction,
    extra: ActionExtra,
    limit: number,
    skipIds: string[],
  ): Promise<SweepOutcome[]> {
    const due = db('transaction_deadlines as deadline')
      .join('transactions as transaction', 'transaction.id', 'deadline.transaction_id')
      .where('deadline.kind', kind)
      .where('deadline.due_at', '<=', now())
      .where('transaction.status', status);
    if (skipIds.length > 0) due.whereNotIn('transaction.id', skipIds);
    const rows = (await due.orderBy('deadline.due_at').limit(limit).select('transaction.id')) as { id: string }[];
    return Promise.all(
      rows.map(({ id }) =>
        moveOne(id, action, extra).then(
          (moved) => ({ id, moved }),
          (error: unknown) => ({ id, moved: false, error }),
        ),
      ),
    );
  }

  /** Settles up to `limit` delivered transactions whose auto_confirm_at has passed. */
  const autoConfirmDue = (limit: number, skipIds: string[] = []) => sweepDue('auto_confirm', 'delivered', 'auto_confirm', {}, limit, skipIds);

  /**
   * Fails up to `limit` invokes whose deadline has passed while they are still frozen (their server
   * died during the call), releasing the funds. A late answer of that callback then finds the
   * transaction failed and cannot settle it: settling is a compare-and-set from frozen.
   */
  const failOverdueInvokes = (limit: number, skipIds: string[] = []) => sweepDue('invoke', 'frozen', 'fail', { invoke: overdueInvoke }, limit, skipIds);

  return { autoConfirmDue, failOverdueInvokes };
}
