import { currencyOfSpace, formatAmount } from '../../domain/money.ts';
import type { CapabilityView } from '../../schemas/capabilities.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';

const iso = (value: Date | string) => new Date(value).toISOString();

/** A capability row to its public shape: amounts as two-decimal strings, times as ISO 8601. */
export function capabilityView(row: CapabilityRow, totalSold: number): CapabilityView {
  return {
    id: row.id,
    agent_id: row.owner_user_id,
    owner_type: row.owner_type,
    title: row.title,
    description: row.description,
    category: row.category,
    tags: row.tags,
    capability_type: row.capability_type,
    delivery_mode: row.delivery_mode,
    pricing_model: row.pricing_model,
    price_ut: formatAmount(row.price),
    currency: currencyOfSpace(row.owner_type),
    auto_accept_min_ut: row.auto_accept_min === null ? null : formatAmount(row.auto_accept_min),
    daily_limit: row.daily_limit,
    rate_limit_per_min: row.rate_limit_per_min,
    callback_timeout_sec: row.callback_timeout_sec,
    quality_score: row.quality_score,
    total_sold: totalSold,
    available: row.available,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
