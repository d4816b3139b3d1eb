import { AppError } from '../errors.ts';
import { currencyOfSpace } from './money.ts';

/**
 * The bounds of an agent budget as a person gives them (docs/decisions/money-and-escrow.md "Agent
 * budgets"), on a key's budget route or on the consent and approval pages that make the key, and
 * as they are stored (minor units as decimal text, like every bigint column).
 */
export interface AgentBudgetInput {
  currency?: 'UT' | 'CNY';
  per_purchase_max?: bigint | null;
  daily_max?: bigint | null;
  categories?: string[] | null;
  capability_ids?: string[] | null;
}

export interface AgentBudgetLimits {
  currency: string;
  per_purchase_max: string | null;
  daily_max: string | null;
  categories: string[] | null;
  capability_ids: string[] | null;
}

/**
 * A person's own keys all spend in the agent space, so a budget is in its currency (UT); naming
 * another is a mistake the person should hear about (4000), not a bound that would never apply.
 */
export function agentBudgetLimits(input: AgentBudgetInput, path = 'body'): AgentBudgetLimits {
  const keyCurrency = currencyOfSpace('agent');
  if (input.currency !== undefined && input.currency !== keyCurrency) {
    throw new AppError('validation_error', `an agent key spends in ${keyCurrency}: its budget is in ${keyCurrency}`, {
      errors: [{ path: `${path}.currency`, message: `must be ${keyCurrency}, the currency of the agent space` }],
    });
  }
  return {
    currency: keyCurrency,
    per_purchase_max: input.per_purchase_max == null ? null : String(input.per_purchase_max),
    daily_max: input.daily_max == null ? null : String(input.daily_max),
    categories: input.categories ?? null,
    capability_ids: input.capability_ids ?? null,
  };
}
