import type { Knex } from 'knex';
import { prepared } from '../db/prepared.ts';
import type { TransactionStatus } from '../domain/escrow.ts';
import type { Currency } from '../domain/money.ts';

export interface TransactionRow {
  id: string;
  buyer_user_id: string;
  seller_user_id: string;
  /** The capability bought, or null for an accepted task application (then task_id, skill_id and application_id name it). */
  capability_id: string | null;
  task_id?: string | null;
  skill_id?: string | null;
  application_id?: string | null;
  demand_id: string | null;
  /**
   * The person's own key (API key, device or MCP grant) that made the transaction, whose agent
   * budget it counts against; null for a person's session, an operator's key and the system.
   * Shown to the buyer only (docs/decisions/money-and-escrow.md "Agent budgets").
   */
  api_key_id?: string | null;
  context_id: string;
  space: 'agent' | 'human';
  currency: Currency;
  transaction_type: string;
  price: string;
  booked_hours: number | null;
  /** A task's delivery period, fixed when its application was accepted: hours from the seller's acceptance to `delivery_deadline`. */
  delivery_hours?: number | null;
  /** The UTC day whose unit of the capability's daily_limit this purchase took when created (null: none). */
  counted_day_start?: Date | string | null;
  auto_accept: boolean;
  status: TransactionStatus;
  note: string | null;
  client_task_id: string | null;
  conversation_id: string | null;
  fee_bps: number;
  dispute_reason: string | null;
  input: Record<string, unknown> | null;
  result_payload: Record<string, unknown> | null;
  event_sequence: number;
  frozen_at: Date | null;
  accepted_at: Date | null;
  delivered_at: Date | null;
  confirmed_at: Date | null;
  settled_at: Date | null;
  delivery_deadline: Date | null;
  auto_confirm_at: Date | null;
  /** Set on an invoke's transaction: past it, the callback has certainly ended (sweeper). */
  invoke_deadline: Date | null;
  invoke_latency_ms: number | null;
  invoke_error: 'callback_failed' | 'callback_timeout' | null;
  invoke_error_detail: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Read before every move, so it is a prepared statement. */
export async function findTransaction(db: Knex, id: string): Promise<TransactionRow | undefined> {
  const rows = await prepared<TransactionRow>(db, 'SELECT * FROM transactions WHERE id = ?', [id]);
  return rows[0];
}

export interface ListFilter {
  userId: string;
  space: 'agent' | 'human';
  role?: 'buyer' | 'seller' | '';
  status?: TransactionStatus;
  contextId?: string;
  /** Only those this key made (transactions.api_key_id). */
  apiKeyId?: string;
}

export function listQuery(db: Knex, filter: ListFilter) {
  const query = db<TransactionRow>('transactions').where({ space: filter.space });
  if (filter.role === 'buyer') query.where({ buyer_user_id: filter.userId });
  else if (filter.role === 'seller') query.where({ seller_user_id: filter.userId });
  else
    query.where((where) => {
      where.where({ buyer_user_id: filter.userId }).orWhere({ seller_user_id: filter.userId });
    });
  if (filter.status) query.where({ status: filter.status });
  if (filter.contextId) query.where({ context_id: filter.contextId });
  if (filter.apiKeyId) query.where({ api_key_id: filter.apiKeyId });
  return query;
}
