import type { Knex } from 'knex';
import type { AgentTransactionList, AgentTransactionsInput, ListTransactionsInput, TransactionEventView } from '../../schemas/transactions.ts';
import { findApiKeyById } from '../../store/identity.ts';
import { type TransactionRow, listQuery } from '../../store/transactions.ts';
import { authorize, listKeyTransactions, visibleScope } from '../access/index.ts';
import { newestFirstPage, type Principal } from '../common/index.ts';
import { transactionView, withLargeFieldsLeftOut } from './views.ts';

interface ListOptions<Item> {
  /** Only the transactions this key made. */
  apiKeyId?: string;
  view: (row: TransactionRow) => Item;
}

/** Newest first; with a cursor, keyset pagination on (created_at, id) that inserts cannot shift. */
async function listRows<Item>(db: Knex, principal: Principal, query: ListTransactionsInput, options: ListOptions<Item>) {
  const filter = { ...visibleScope(principal), role: query.role, status: query.status, contextId: query.context_id, apiKeyId: options.apiKeyId };
  const listed = await newestFirstPage<TransactionRow>(() => listQuery(db, filter), query);
  return { ...listed, items: listed.items.map(options.view) };
}

/**
 * The transaction lists: a caller's own (GET /api/v1/transactions and the JSON-RPC list), and a
 * person's agent-space transactions with the key that made each (the console's My agents;
 * docs/decisions/money-and-escrow.md "Agent budgets").
 */
export function createTransactionLists(db: Knex) {
  const list = (principal: Principal, query: ListTransactionsInput) =>
    listRows<TransactionEventView>(db, principal, query, { view: (row) => withLargeFieldsLeftOut(transactionView(row)) });

  /**
   * The key is shown to the buyer only: a seller must not learn which of the buyer's keys bought,
   * so a sale carries null. Filtering by a key that is not the caller's is 4040, as for its budget.
   */
  async function agentTransactions(person: Principal, query: AgentTransactionsInput): Promise<AgentTransactionList> {
    if (query.api_key_id) authorize(listKeyTransactions, person, await findApiKeyById(db, query.api_key_id), 'API key');
    // The same transactions an agent key of the person reads: their own of the agent space.
    const asAgent: Principal = { ...person, caller_type: 'agent', api_key_id: null };
    return listRows(db, asAgent, query, {
      apiKeyId: query.api_key_id,
      view: (row) => ({
        ...withLargeFieldsLeftOut(transactionView(row)),
        api_key_id: row.buyer_user_id === person.user_id ? (row.api_key_id ?? null) : null,
      }),
    });
  }

  return { list, agentTransactions };
}
