import type { CapabilityRow } from '../../store/capabilities.ts';
import type { Rule } from './rules.ts';
import { buyCapability } from './capabilities.ts';

/**
 * Who may invoke a capability (decisions section 7): whoever may buy it, when it is priced per
 * query or per use (one price, known before the call, charged once per call) and has a
 * callback_url to call. Other pricing models (per hour, per day, subscription) are bought with a
 * transaction and delivered by the seller; invoking one is 4030.
 */
export const invokablePricingModels: readonly string[] = ['per_query', 'per_use'];

type Invokable = Pick<CapabilityRow, 'owner_type' | 'owner_user_id' | 'available' | 'deleted_at' | 'pricing_model' | 'callback_url'>;

export const invokeCapability: readonly Rule<Invokable>[] = [
  ...buyCapability,
  {
    says: 'the capability is priced per query or per use',
    holds: (_caller, row) => invokablePricingModels.includes(row.pricing_model),
    otherwise: { forbidden: 'only per_query and per_use capabilities can be invoked' },
  },
  {
    says: 'the capability has a callback_url',
    holds: (_caller, row) => Boolean(row.callback_url),
    otherwise: { forbidden: 'this capability has no callback_url to invoke' },
  },
];
