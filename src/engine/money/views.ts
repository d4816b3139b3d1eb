import { formatAmount } from '../../domain/money.ts';
import { limits } from '../../limits.ts';
import type { OmittedField, TransactionEventView, TransactionView } from '../../schemas/transactions.ts';
import type { TransactionRow } from '../../store/transactions.ts';

/** Rows to the public shapes. Amounts leave as two-decimal strings, times as ISO 8601. */
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export function transactionView(row: TransactionRow): TransactionView {
  return {
    id: row.id,
    buyer_user_id: row.buyer_user_id,
    seller_user_id: row.seller_user_id,
    capability_id: row.capability_id,
    task_id: row.task_id ?? null,
    skill_id: row.skill_id ?? null,
    demand_id: row.demand_id,
    transaction_type: row.transaction_type,
    context_id: row.context_id,
    price_ut: formatAmount(row.price),
    currency: row.currency,
    booked_hours: row.booked_hours,
    status: row.status,
    result_payload: row.result_payload,
    input: row.input,
    note: row.note,
    dispute_reason: row.dispute_reason,
    frozen_at: iso(row.frozen_at),
    accepted_at: iso(row.accepted_at),
    delivered_at: iso(row.delivered_at),
    confirmed_at: iso(row.confirmed_at),
    settled_at: iso(row.settled_at),
    delivery_deadline: iso(row.delivery_deadline),
    auto_confirm_at: iso(row.auto_confirm_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/**
 * The size of a JSON field, remembered per object: a row copied for each step of a change keeps
 * the same `input` object, so its size is computed once, not once per event.
 */
const jsonBytesOfObject = new WeakMap<object, number>();

export function jsonBytesOf(value: Record<string, unknown> | null): number {
  if (value === null) return 0;
  let bytes = jsonBytesOfObject.get(value);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(JSON.stringify(value));
    jsonBytesOfObject.set(value, bytes);
  }
  return bytes;
}

const largeFields = ['input', 'result_payload'] as const;
type LargeField = (typeof largeFields)[number];

/**
 * A view as answers that carry many transactions (events, stored responses, lists, A2A task
 * metadata) show it: an `input` or `result_payload` larger than `limits.eventFieldInlineBytesMax`
 * is null and named in `omitted_fields`, so the answer's size is bounded by the limits, not by
 * what buyers and sellers wrote (a batch of 50 reads of one task with a 900 KB input answered
 * 45 MB). Both fields never change once set (input at create, result_payload at deliver), so
 * GET /api/v1/transactions/{id} supplies them whenever they are wanted.
 */
export function withLargeFieldsLeftOut<V extends TransactionView>(
  view: V,
  fields: readonly LargeField[] = largeFields,
): V & Pick<TransactionEventView, 'omitted_fields'> {
  const omitted: OmittedField[] = [];
  const shown: V & Pick<TransactionEventView, 'omitted_fields'> = { ...view };
  for (const field of fields) {
    const bytes = jsonBytesOf(view[field]);
    if (bytes > limits.eventFieldInlineBytesMax) {
      shown[field] = null;
      omitted.push({ field, bytes });
    }
  }
  if (omitted.length > 0) shown.omitted_fields = omitted;
  return shown;
}

/**
 * The view an event (and the stored idempotency response, which is the last event's view)
 * carries: the transaction as GET shows it, with its large fields left out; the events and stored
 * responses then cost a few hundred bytes each instead of a copy of the largest fields each.
 */
export function transactionEventView(row: TransactionRow): TransactionEventView {
  return withLargeFieldsLeftOut(transactionView(row));
}

/** The full view again: the fields an event view left out, taken from the transaction's row. */
export function withOmittedFields(view: TransactionEventView, row: TransactionRow): TransactionView {
  const { omitted_fields: omitted, ...complete } = view;
  for (const { field } of omitted ?? []) complete[field] = row[field];
  return complete;
}
