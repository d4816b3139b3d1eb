import type { Knex } from 'knex';
import { limits } from '../limits.ts';

/**
 * The market data behind a pricing suggestion, in one space and one category: the newest
 * available capabilities' listed prices, and the newest settled transactions' prices with what
 * is needed to turn them into unit prices. Each read is bounded by limits.pricingSampleRowsMax.
 */
export interface PricingScope {
  space: 'agent' | 'human';
  category: string;
  pricingModel?: string;
}

export interface ListedPriceRow {
  price: string;
  title: string;
  description: string;
}

export interface SettledPriceRow extends ListedPriceRow {
  /** The pricing model the sale was made under; the capability may have changed its own since. */
  transaction_type: string;
  booked_hours: number | null;
}

export function listedPrices(db: Knex, scope: PricingScope): Promise<ListedPriceRow[]> {
  const query = db('capabilities')
    .select('price', 'title', 'description')
    .where({ owner_type: scope.space, category: scope.category, available: true })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limits.pricingSampleRowsMax);
  if (scope.pricingModel) query.andWhere('pricing_model', scope.pricingModel);
  return query;
}

export function settledPrices(db: Knex, scope: PricingScope): Promise<SettledPriceRow[]> {
  const query = db('transactions as t')
    .join('capabilities as c', 'c.id', 't.capability_id')
    .select('t.price', 't.booked_hours', 't.transaction_type', 'c.title', 'c.description')
    .where({ 't.space': scope.space, 't.status': 'settled', 'c.owner_type': scope.space, 'c.category': scope.category })
    .orderBy([
      { column: 't.settled_at', order: 'desc' },
      { column: 't.id', order: 'desc' },
    ])
    .limit(limits.pricingSampleRowsMax);
  // A sale counts under the model it was made under, not the capability's current one: a seller
  // who switches from per_hour to per_use must not turn a three-hour total into a per-use price.
  if (scope.pricingModel) query.andWhere('t.transaction_type', scope.pricingModel);
  return query;
}
