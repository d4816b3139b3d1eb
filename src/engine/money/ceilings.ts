import type { Knex } from 'knex';
import { prepared } from '../../db/prepared.ts';
import { currencyOfSpace } from '../../domain/money.ts';
import { type PricingModel, assertWithinCeiling, transactionPrice } from '../../domain/pricing.ts';
import type { Principal } from '../common/index.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';

/**
 * The buyer's ceiling (docs/decisions/money-and-escrow.md "Price ceilings"): a buyer is never charged more than it
 * agreed to. An explicit max_price is the ceiling. A buyer that sent none but has bought this
 * capability before agreed to the unit price it paid then, so a raised price is refused until the
 * buyer sends the new price as max_price; a first purchase without one pays the listed price,
 * which is all the buyer could have seen. Checked on the capability row read inside the purchase's
 * own unit of work, before any usage is counted or money frozen.
 */
const lastPurchase = `SELECT price, booked_hours, transaction_type FROM transactions
  WHERE buyer_user_id = ? AND capability_id = ? ORDER BY created_at DESC LIMIT 1`;

interface PastPurchase {
  price: string;
  booked_hours: number | null;
  transaction_type: string;
}

/** The unit price a past purchase was made at (its price divided by the units it booked). */
function unitPriceOf(past: PastPurchase): bigint {
  const price = BigInt(past.price);
  if (past.booked_hours === null) return price;
  const units = past.transaction_type === 'per_hour' ? past.booked_hours : past.transaction_type === 'per_day' ? Math.ceil(past.booked_hours / 24) : 1;
  return units > 0 ? price / BigInt(units) : price;
}

export async function assertBuyerCeiling(
  trx: Knex,
  principal: Principal,
  capability: CapabilityRow,
  price: bigint,
  purchase: { booked_hours?: number; max_price?: bigint },
): Promise<void> {
  const currency = currencyOfSpace(principal.caller_type);
  if (purchase.max_price !== undefined) return assertWithinCeiling(price, purchase.max_price, currency);
  const [past] = await prepared<PastPurchase>(trx, lastPurchase, [principal.user_id, capability.id]);
  if (!past) return;
  const agreed = transactionPrice(capability.pricing_model as PricingModel, unitPriceOf(past), purchase.booked_hours);
  assertWithinCeiling(price, agreed, currency, 'the price rose since your last purchase of this capability; send max_price to accept the new price');
}
