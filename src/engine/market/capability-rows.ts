import { wordColumnsOf } from '../../domain/term-vectors.ts';
import { randomBytes, randomUUID } from 'node:crypto';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type CreateCapabilityInput, type UpdateCapabilityInput, callbackRequirement, modelsNeedingCallback } from '../../schemas/capabilities.ts';
import { ownerTypeOf } from '../access/index.ts';
import type { Principal } from '../common/index.ts';

/** Requests to capability rows: what create inserts and what an update changes. */

/**
 * A callback secret: 32 random bytes, prefixed so that one found in a log or a repository is
 * recognisable for what it is.
 */
export const newCallbackSecret = () => `cbs_${randomBytes(32).toString('base64url')}`;

const amountColumn = (amount: bigint | null | undefined) => (amount === undefined ? undefined : amount === null ? null : String(amount));

/** A new capability of the caller's, in the caller's space, with a fresh callback secret. */
export function newCapabilityRow(principal: Principal, input: CreateCapabilityInput, at: Date) {
  return {
    id: randomUUID(),
    owner_user_id: principal.user_id,
    owner_type: ownerTypeOf(principal),
    title: input.title,
    description: input.description,
    category: input.category,
    capability_type: input.capability_type,
    pricing_model: input.pricing_model,
    price: String(input.price_ut ?? 0n),
    auto_accept_min: amountColumn(input.auto_accept_min_ut) ?? null,
    delivery_mode: input.delivery_mode ?? 'instant',
    tags: JSON.stringify(input.tags ?? []),
    daily_limit: input.daily_limit ?? null,
    rate_limit_per_min: input.rate_limit_per_min ?? null,
    callback_url: input.callback_url ?? null,
    callback_timeout_sec: input.callback_timeout_sec ?? limits.callbackTimeoutSecondsDefault,
    callback_secret: newCallbackSecret(),
    ...wordColumnsOf({ title: input.title, description: input.description, tags: input.tags ?? [] }),
    created_at: at,
    updated_at: at,
  };
}

/**
 * The columns a partial update sets: only the fields the request names. null clears an optional
 * setting (auto-accept threshold, limits, callback address).
 */
export function changedColumns(patch: UpdateCapabilityInput): Record<string, unknown> {
  const columns: Record<string, unknown> = {
    title: patch.title,
    description: patch.description,
    category: patch.category,
    capability_type: patch.capability_type,
    pricing_model: patch.pricing_model,
    price: amountColumn(patch.price_ut),
    auto_accept_min: amountColumn(patch.auto_accept_min_ut),
    delivery_mode: patch.delivery_mode,
    tags: patch.tags === undefined ? undefined : JSON.stringify(patch.tags),
    daily_limit: patch.daily_limit,
    rate_limit_per_min: patch.rate_limit_per_min,
    callback_url: patch.callback_url,
    callback_timeout_sec: patch.callback_timeout_sec,
    available: patch.available,
  };
  return Object.fromEntries(Object.entries(columns).filter(([, value]) => value !== undefined));
}

/**
 * The rule create checks in its schema, applied to the capability as an update leaves it: a
 * model the service executes by calling back keeps a callback address.
 */
export function requireCallbackAfterUpdate(pricingModel: string, callbackUrl: string | null) {
  if (modelsNeedingCallback.includes(pricingModel) && !callbackUrl) {
    throw new AppError('validation_error', 'request failed validation', { errors: [{ path: 'body.callback_url', message: callbackRequirement }] });
  }
}
