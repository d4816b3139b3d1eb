import { z } from 'zod';
import { categoryCodes } from '../domain/categories.ts';
import { limits } from '../limits.ts';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';

/**
 * Agent budgets (docs/decisions/money-and-escrow.md "Agent budgets"): what a person lets one of
 * their own keys spend. The same input is set on a key (PUT /api/v1/auth/api-keys/{id}/budget) or
 * chosen on the consent and approval pages when the key is made.
 */
const bound = (what: string) =>
  amountInput
    .nullable()
    .optional()
    .meta({ description: `${what}, in the currency of the key's space (UT for an agent key); null or left out: no bound` });

export const agentBudgetBody = z
  .strictObject({
    currency: currency.optional().meta({ description: "The currency of the key's space (UT: every agent key spends in the agent space); left out: that one" }),
    per_purchase_max: bound('The most one charge may be (a purchase, an invoke, a bounty held, an application accepted)'),
    daily_max: bound('The most the key may be charged per UTC day, all charges together; a release gives back what it freed'),
    categories: z
      .array(z.enum(categoryCodes))
      .max(categoryCodes.length)
      .nullable()
      .optional()
      .meta({ description: 'Only capabilities and tasks of these categories; null or left out: any' }),
    capability_ids: z
      .array(uuid)
      .max(limits.agentBudgetCapabilitiesMax)
      .nullable()
      .optional()
      .meta({ description: 'Only these capabilities (beside the categories, if any); null or left out: any' }),
  })
  .meta({ id: 'AgentBudgetRequest' });

export const agentBudgetView = z
  .object({
    api_key_id: uuid,
    currency,
    per_purchase_max: amountOutput.nullable(),
    daily_max: amountOutput.nullable(),
    categories: z.array(z.string()).nullable(),
    capability_ids: z.array(z.string()).nullable(),
    spent_today: amountOutput.meta({ description: 'Charged today (UTC), less what releases gave back' }),
    left_today: amountOutput.nullable().meta({ description: 'daily_max less spent_today (never below 0.00); null: no daily bound' }),
    resets_at: dateTime.meta({ description: 'When the day ends (UTC midnight) and spent_today starts again from 0' }),
    updated_at: dateTime,
  })
  .meta({ id: 'AgentBudget' });

export const agentBudgetOfKey = z
  .object({ api_key_id: uuid, budget: agentBudgetView.nullable().meta({ description: 'null: the key has no budget' }) })
  .meta({ id: 'AgentBudgetOfKey' });

export const agentBudgetParams = z.object({ id: uuid });

export type AgentBudgetInput = z.output<typeof agentBudgetBody>;
export type AgentBudgetView = z.infer<typeof agentBudgetView>;
