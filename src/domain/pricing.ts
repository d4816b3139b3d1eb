import { AppError } from '../errors.ts';
import { type Currency, type MinorUnits, formatAmount } from './money.ts';

/** Price rules of decisions section 4: the price of a transaction at creation. */
export const pricingModels = ['per_use', 'per_query', 'per_hour', 'per_day', 'subscription'] as const;
export type PricingModel = (typeof pricingModels)[number];

export function transactionPrice(model: PricingModel, unitPrice: MinorUnits, bookedHours: number | undefined): MinorUnits {
  if (model === 'per_hour' || model === 'per_day') {
    if (bookedHours === undefined) {
      throw new AppError('validation_error', 'booked_hours is required', {
        errors: [{ path: 'body.booked_hours', message: `required for a ${model} capability` }],
      });
    }
    const units = model === 'per_hour' ? bookedHours : Math.ceil(bookedHours / 24);
    return unitPrice * BigInt(units);
  }
  // booked_hours also sets the delivery deadline, so on a model it does not price it would only
  // let a buyer shorten the seller's time to deliver.
  if (bookedHours !== undefined) {
    throw new AppError('validation_error', 'booked_hours is only for per_hour and per_day capabilities', {
      errors: [{ path: 'body.booked_hours', message: `not allowed for a ${model} capability` }],
    });
  }
  return unitPrice;
}

/**
 * A buyer is never charged above the ceiling it agreed to (an explicit max_price, or the price it
 * was shown). Checked on the price read inside the purchase's own statement or transaction, so a
 * seller's change between the buyer's look and the charge is refused with nothing written.
 */
export function assertWithinCeiling(
  price: MinorUnits,
  ceiling: MinorUnits | undefined,
  currency: Currency,
  why = 'the price is above the max_price you sent',
): void {
  if (ceiling === undefined || price <= ceiling) return;
  throw new AppError('price_above_ceiling', why, {
    currency,
    price: formatAmount(price),
    max_price: formatAmount(ceiling),
    detail: `${why}; nothing was charged. To pay ${formatAmount(price)} ${currency}, send max_price "${formatAmount(price)}" or more.`,
  });
}
