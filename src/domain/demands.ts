import { AppError } from '../errors.ts';

/**
 * Demand states (docs/decisions/matching.md "Demands and matching"). Stored: open, cancelled, fulfilled.
 * `expired` is never stored: an open demand whose expires_at has passed by the engine's clock is
 * expired, so expiry needs no sweeper and takes effect at exactly that instant on every instance.
 */
export const demandStatuses = ['open', 'cancelled', 'fulfilled', 'expired'] as const;
export type DemandStatus = (typeof demandStatuses)[number];
export type StoredDemandStatus = Exclude<DemandStatus, 'expired'>;
export const demandTypes = ['explicit', 'implicit'] as const;

export function effectiveStatus(stored: StoredDemandStatus, expiresAt: Date | string | null, now: Date): DemandStatus {
  if (stored === 'open' && expiresAt !== null && new Date(expiresAt).getTime() <= now.getTime()) return 'expired';
  return stored;
}

/** Only an open demand can be cancelled or matched; anything else is 4090 with its status. */
export function requireOpen(status: DemandStatus, action: 'cancel' | 'match'): void {
  if (status !== 'open') throw new AppError('invalid_state_transition', `cannot ${action} a demand that is ${status}`, { status, action });
}
