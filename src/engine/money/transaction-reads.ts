import type { TransactionEventView, TransactionView } from '../../schemas/transactions.ts';
import { type TransactionRow, findTransaction } from '../../store/transactions.ts';
import { canSee, partyOf } from '../access/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { isUuid } from '../../domain/ids.ts';
import { notFound } from '../../errors.ts';
import type { Outcome } from './idempotency.ts';
import { createTransactionLists } from './transaction-lists.ts';
import { transactionView, withOmittedFields } from './views.ts';

/**
 * The reads of marketplace transactions for a caller who may see them (a party, in its space), and
 * the completion of a stored or streamed event view that left a large field out. The moves are
 * transactions.ts.
 */
export function createTransactionReads(db: EngineDependencies['db']) {
  /**
   * A stored response is the change's event view, which leaves a large input or result_payload
   * out. Neither field ever changes once set, so the replay completes it from the row and returns
   * exactly what the first response did.
   */
  async function completed(outcome: Outcome<TransactionEventView>): Promise<Outcome<TransactionView>> {
    if (!outcome.replayed || !outcome.data.omitted_fields) return outcome;
    const row = await findTransaction(db, outcome.data.id);
    return { ...outcome, data: withOmittedFields(outcome.data, row!) };
  }

  /** An event's view with what it left out read from the transaction, for a party of it. */
  async function completeView(principal: Principal, view: TransactionEventView): Promise<TransactionView> {
    return view.omitted_fields ? get(principal, view.id) : view;
  }

  /**
   * Finds the transaction a caller means by an id that is either the transaction's own id or a
   * task id the caller chose as buyer (A2A v0.1). Anything the caller may not see is 4040.
   */
  async function findForCaller(principal: Principal, idOrClientTaskId: string): Promise<TransactionView> {
    // A client task id names a task only among the buyer's own; who may see it is the usual rule.
    const byClientId = await db<TransactionRow>('transactions').where({ buyer_user_id: principal.user_id, client_task_id: idOrClientTaskId }).first();
    if (byClientId && canSee(principal, byClientId)) return transactionView(byClientId);
    if (!isUuid(idOrClientTaskId)) throw notFound('transaction');
    return get(principal, idOrClientTaskId.toLowerCase());
  }

  async function get(principal: Principal, id: string): Promise<TransactionView> {
    return transactionView(partyOf(principal, await findTransaction(db, id)).row);
  }

  const { list, agentTransactions } = createTransactionLists(db);

  return { completed, completeView, get, findForCaller, list, agentTransactions };
}
