import { AppError } from '../errors.ts';
import type { MinorUnits } from './money.ts';

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
