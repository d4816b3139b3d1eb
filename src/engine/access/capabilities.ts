import type { CapabilityRow } from '../../store/capabilities.ts';
import { type Caller, type Rule } from './rules.ts';

/**
 * Who may see and buy a capability. Capabilities live in the space of the caller type that
 * registered them (owner_type); the other space does not see them (4040). Buying needs the
 * capability to be offered still (else 4040, as if withdrawn) and to be someone else's (4030).
 */
type Offer = Pick<CapabilityRow, 'owner_type' | 'owner_user_id' | 'available' | 'deleted_at'>;

export const seeCapability: readonly Rule<Offer>[] = [
  { says: "the capability is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
  // A deleted capability is gone for everyone; the transactions that bought it keep its id.
  { says: 'the capability has not been deleted', holds: (_caller, row) => row.deleted_at === null, otherwise: 'not_found' },
];

/** Changing a capability (update, delete, rotating its secret) is its owner's alone. */
export const manageCapability: readonly Rule<Offer>[] = [
  ...seeCapability,
  {
    says: "the capability is the caller's own",
    holds: (caller, row) => row.owner_user_id === caller.user_id,
    otherwise: { forbidden: 'only the owner can change a capability' },
  },
];

export const buyCapability: readonly Rule<Offer>[] = [
  ...seeCapability,
  { says: 'the capability is still offered', holds: (_caller, row) => Boolean(row.available), otherwise: 'not_found' },
  {
    says: "the capability is not the caller's own",
    holds: (caller, row) => row.owner_user_id !== caller.user_id,
    otherwise: { forbidden: 'you cannot buy your own capability' },
  },
];

/** A capability is registered in its creator's space. */
export const ownerTypeOf = (caller: Caller) => caller.caller_type;
