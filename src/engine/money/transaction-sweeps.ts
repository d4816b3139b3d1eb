import { withTransaction } from '../../db/transaction.ts';
import type { EngineDependencies } from '../common/index.ts';
import type { ActionExtra, Transitions } from './transitions.ts';

/** How the sweeper (or a waiting retry) records an invoke whose callback outlived its deadline. */
export const overdueInvoke = {
  latency_ms: null,
  error: 'callback_timeout',
  error_detail: 'the invoke outlived its deadline without an answer',
  result: null,
} as const satisfies ActionExtra['invoke'];

/** The moves the sweeper makes as the system (sweeper.ts): an auto-confirm, and the failure of an overdue invoke. */
export function createTransactionSweeps({ db, now }: Pick<EngineDependencies, 'db' | 'now'>, transitions: Transitions) {
  /**
   * Used by the sweeper: claims one transaction whose deadline of `kind` has passed while it is
   * still in `status`, with SKIP LOCKED (another instance takes another row), and applies `action`
   * to it as the system. The deadlines are rows of their own (store/change-deadlines.ts), read
   * from their (kind, due_at) index without a lock; only the transaction row is locked. A failure
   * is reported with the row's id so the sweeper can pass over that row instead of retrying it forever.
   */
  async function sweepNext(
    kind: 'auto_confirm' | 'invoke',
    status: 'delivered' | 'frozen',
    action: 'auto_confirm' | 'fail',
    extra: ActionExtra,
    skipIds: string[],
  ): Promise<{ id: string; error?: unknown } | null> {
    let claimedId: string | null = null;
    try {
      return await withTransaction(db, async (unit) => {
        const due = unit
          .trx('transaction_deadlines as deadline')
          .join('transactions as transaction', 'transaction.id', 'deadline.transaction_id')
          .where('deadline.kind', kind)
          .where('deadline.due_at', '<=', now())
          .where('transaction.status', status);
        if (skipIds.length > 0) due.whereNotIn('transaction.id', skipIds);
        const row = (await due.orderBy('deadline.due_at').first('transaction.id').forUpdate('transaction').skipLocked()) as { id: string } | undefined;
        if (!row) return null;
        claimedId = row.id;
        await transitions.move(unit, claimedId, action, { system: 'system' }, extra);
        return { id: claimedId };
      });
    } catch (error) {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- claimedId is set inside the transaction callback before a later step may throw
      if (claimedId === null) throw error;
      return { id: claimedId, error };
    }
  }

  /** Settles one delivered transaction whose auto_confirm_at has passed. */
  const autoConfirmNextDue = (skipIds: string[] = []) => sweepNext('auto_confirm', 'delivered', 'auto_confirm', {}, skipIds);

  /**
   * Fails one invoke whose deadline has passed while it is still frozen (its server died during
   * the call), releasing the funds. A late answer of that callback then finds the transaction
   * failed and cannot settle it: settling is a compare-and-set from frozen.
   */
  const failNextOverdueInvoke = (skipIds: string[] = []) => sweepNext('invoke', 'frozen', 'fail', { invoke: overdueInvoke }, skipIds);

  return { autoConfirmNextDue, failNextOverdueInvoke };
}
