import type { DemandStatus } from '../../domain/demands.ts';
import type { DemandRow } from '../../store/demands.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import { seeCapability } from './capabilities.ts';
import type { Rule } from './rules.ts';

/**
 * Who may see and act on a demand. A demand lives in its creator's space (owner_type); the other
 * space never sees it (4040). Within the space, an open demand is public: providers who discover
 * it may read it and evaluate their capabilities against it. A demand that is no longer open
 * (cancelled, fulfilled, expired) is its owner's business only: others get 4040. Lists show only
 * the caller's own; only the owner may cancel (4030 for a provider who can see it).
 */
export type SeenDemand = Pick<DemandRow, 'owner_type' | 'owner_user_id'> & { effective_status: DemandStatus };

export const seeDemand: readonly Rule<SeenDemand>[] = [
  { says: "the demand is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
  {
    says: "the demand is the caller's own, or open",
    holds: (caller, row) => row.owner_user_id === caller.user_id || row.effective_status === 'open',
    otherwise: 'not_found',
  },
];

export const ownDemand: readonly Rule<SeenDemand>[] = [
  ...seeDemand,
  {
    says: "the demand is the caller's own",
    holds: (caller, row) => row.owner_user_id === caller.user_id,
    otherwise: { forbidden: 'only the requester may do this to a demand' },
  },
];

/**
 * discover-demands is the capability owner's: other users of the space get 4030, the other space
 * 4040. It reads the capability, so the capability's own visibility applies first: a deleted one
 * is gone, for its owner too (4040).
 */
export const discoverFor: readonly Rule<Pick<CapabilityRow, 'owner_type' | 'owner_user_id' | 'available' | 'deleted_at'>>[] = [
  ...seeCapability,
  {
    says: "the capability is the caller's own",
    holds: (caller, row) => row.owner_user_id === caller.user_id,
    otherwise: { forbidden: 'only the owner may discover demands for a capability' },
  },
];

/** evaluate-alignment reads capabilities that are offered in the caller's space; others are 4040. */
export const alignWith: readonly Rule<Pick<DemandRow, 'owner_type'> & { available: boolean }>[] = [
  { says: "the capability is in the caller's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
  { says: 'the capability is offered', holds: (_caller, row) => row.available, otherwise: 'not_found' },
];

/**
 * A purchase may name a demand it is made for (`demand_id`): only one of the buyer's own, in the
 * space the buyer buys in. Any other demand is 4040, never 4030, so a purchase cannot be used to
 * probe other requesters' demands. The demand's status does not matter (docs/decisions/matching.md "Demands and matching").
 */
export const linkPurchaseTo: readonly Rule<Pick<DemandRow, 'owner_type' | 'owner_user_id'>>[] = [
  { says: "the demand is in the buyer's space", holds: (caller, row) => row.owner_type === caller.caller_type, otherwise: 'not_found' },
  { says: "the demand is the buyer's own", holds: (caller, row) => row.owner_user_id === caller.user_id, otherwise: 'not_found' },
];
