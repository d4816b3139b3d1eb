import { currencyOfSpace } from '../../domain/money.ts';
import { type PricingModel, assertWithinCeiling, pricingModels, transactionPrice } from '../../domain/pricing.ts';
import { unitPriceOf } from '../../domain/pricing-suggestion.ts';
import type { Principal } from '../common/index.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import type { PurchaseCheck } from '../../store/change.ts';
import type { TransactionRow } from '../../store/transactions.ts';

/**
 * The buyer's ceiling (docs/decisions/money-and-escrow.md "Price ceilings"): a buyer is never charged more than it
 * agreed to. An explicit max_price is the ceiling. A buyer that sent none but has bought this
 * capability before agreed to the unit price it paid then, so a raised price is refused until the
 * buyer sends the new price as max_price; a first purchase without one pays the listed price,
 * which is all the buyer could have seen. Checked on the capability row and the last purchase as
 * the purchase read them (`purchaseRead`: under an Idempotency-Key in the claim's own statement,
 * else first in the purchase's unit of work), before any usage is counted or money frozen.
 */
interface PastPurchase {
  price: string;
  booked_hours: number | null;
  transaction_type: string;
}

/**
 * The read a purchase (a create, an invoke's hold) starts with, as one statement: the capability
 * and the buyer's last purchase of it, which the ceiling needs when no max_price was sent (an index
 * probe of `transactions_buyer_capability` otherwise not needed, which keeps one statement for
 * every purchase). Under an Idempotency-Key it rides in the claim's own statement
 * (idempotency.ts): a create then reads nothing else before its change.
 */
export function purchaseRead(capabilityId: string, buyerUserId: string): { text: string; bindings: unknown[] } {
  return {
    // The row's version (xmin) and the last purchase's id let a write statement check a cached copy of this read (purchaseCheckOf).
    text: `SELECT capability.*, capability.xmin::text AS capability_version, last.id AS last_purchase_id,
                  last.price AS last_purchase_price, last.booked_hours AS last_purchase_booked_hours, last.transaction_type AS last_purchase_type
      FROM capabilities AS capability
      LEFT JOIN LATERAL (SELECT id, price, booked_hours, transaction_type FROM transactions
                          WHERE buyer_user_id = ? AND capability_id = capability.id ORDER BY created_at DESC LIMIT 1) AS last ON true
     WHERE capability.id = ?`,
    bindings: [buyerUserId, capabilityId],
  };
}

/** A row of `purchaseRead` as the capability and the buyer's last purchase of it (null: none); nothing for no row. */
export function splitPurchaseRead(row: Record<string, unknown> | undefined): { capability?: CapabilityRow; past: PastPurchase | null } {
  if (row === undefined) return { past: null };
  const {
    capability_version: _version,
    last_purchase_id: _lastId,
    last_purchase_price: price,
    last_purchase_booked_hours: bookedHours,
    last_purchase_type: type,
    ...capability
  } = row;
  const past = price === null ? null : { price: price as string, booked_hours: bookedHours as number | null, transaction_type: type as string };
  return { capability: capability as unknown as CapabilityRow, past };
}

/** What a write statement checks of a cached `purchaseRead` row before it buys on it (store/change-purchases.ts). */
export function purchaseCheckOf(row: Record<string, unknown>, buyerUserId: string): PurchaseCheck {
  return {
    capabilityId: row.id as string,
    capabilityVersion: row.capability_version as string,
    buyerUserId,
    lastPurchaseId: (row.last_purchase_id as string | null) ?? null,
  };
}

/** The `purchaseRead` row as it is after `bought` committed: the buyer's last purchase is now that one. */
export function withLastPurchase(row: Record<string, unknown>, bought: TransactionRow): Record<string, unknown> {
  return {
    ...row,
    last_purchase_id: bought.id,
    last_purchase_price: bought.price,
    last_purchase_booked_hours: bought.booked_hours,
    last_purchase_type: bought.transaction_type,
  };
}

/**
 * What a unit price under `model` comes to for this request: null when the model cannot price it
 * (by the hour without hours, or hours on a model that has none).
 */
export function priceUnder(model: string, unitPrice: bigint, bookedHours: number | undefined): bigint | null {
  if (!(pricingModels as readonly string[]).includes(model)) return null;
  if ((model === 'per_hour' || model === 'per_day') !== (bookedHours !== undefined)) return null;
  return transactionPrice(model as PricingModel, unitPrice, bookedHours);
}

/**
 * What the buyer's last purchase's terms would charge for this request: its unit price under the
 * pricing model it was bought on, not the capability's model now. A seller who turns 10.00 a day
 * into 10.00 an hour has not kept the price the buyer agreed to. Null when those terms cannot
 * price this request (a model by the hour then, none now, or the other way round).
 */
function agreedPrice(past: PastPurchase, bookedHours: number | undefined): bigint | null {
  return priceUnder(past.transaction_type, unitPriceOf(BigInt(past.price), past.transaction_type, past.booked_hours), bookedHours);
}

export function assertBuyerCeiling(
  principal: Principal,
  capability: CapabilityRow,
  price: bigint,
  purchase: { booked_hours?: number; max_price?: bigint; shown_price?: bigint },
  past: PastPurchase | null,
): void {
  const currency = currencyOfSpace(principal.caller_type);
  if (purchase.max_price !== undefined) return assertWithinCeiling(price, purchase.max_price, currency);
  if (purchase.shown_price !== undefined) {
    return assertWithinCeiling(price, purchase.shown_price, currency, 'the price is above the one you were shown; send max_price to accept the new price');
  }
  if (!past) return;
  const changedModel = past.transaction_type !== capability.pricing_model;
  const agreed = agreedPrice(past, purchase.booked_hours);
  const why = changedModel
    ? `the capability is now priced ${capability.pricing_model}, not ${past.transaction_type} as when you last bought it; send max_price to accept the new price`
    : 'the price rose since your last purchase of this capability; send max_price to accept the new price';
  // Where the old terms cannot price this request, the unit price the buyer last paid is the most
  // it agreed to: a whole day booked at 1.00 an hour is no agreement to 24.00 a use.
  assertWithinCeiling(price, agreed ?? unitPriceOf(BigInt(past.price), past.transaction_type, past.booked_hours), currency, why);
}
