import { z } from 'zod';
import { agentBudgetView } from '../src/schemas/agent-budgets.ts';
import { capabilityList, capabilityResponse } from '../src/schemas/capabilities.ts';
import { demandResponse } from '../src/schemas/demands.ts';
import { matchResponse } from '../src/schemas/matching.ts';
import { deletedSkillResponse, hallResponse, skillList, skillResponse } from '../src/schemas/skills.ts';
import { acceptedApplicationResponse, applicationList, applicationResponse, taskHallResponse, taskResponse } from '../src/schemas/tasks.ts';
import { transactionResponse } from '../src/schemas/transactions.ts';
import { walletOverview } from '../src/schemas/wallet.ts';

/**
 * What each tool answers (its `structuredContent`), as zod schemas: the REST routes' response
 * schemas (src/schemas/*), and, for a tool that changes something, that answer beside the
 * idempotency key the call used. mcp/schema.ts turns each into the tool's published outputSchema.
 */
const idempotencyKeyUsed = z
  .string()
  .meta({ description: 'The key this call used (yours, or the one generated for it): send it again to retry the same call' });

/** A tool that spends also answers what is left of the calling key's agent budget. */
const agentBudgetLeft = agentBudgetView
  .nullable()
  .meta({ description: "What is left of your key's agent budget after this call (its owner sets it); null: no budget bounds your key" });

/** `{[name]: what, idempotency_key}`: a state-changing tool's answer. */
const keyedAnswer = <N extends string, T extends z.ZodType>(name: N, what: T) =>
  z.object({ [name]: what, idempotency_key: idempotencyKeyUsed } as { [K in N]: T } & { idempotency_key: typeof idempotencyKeyUsed });

export const outputs = {
  capability: capabilityResponse,
  capabilityList,
  match: matchResponse,
  demandCreated: keyedAnswer('demand', demandResponse),
  purchase: keyedAnswer('transaction', transactionResponse).extend({ agent_budget: agentBudgetLeft }),
  transaction: transactionResponse,
  transactionStep: keyedAnswer('transaction', transactionResponse),
  wallet: walletOverview,
  skillHall: hallResponse,
  skill: skillResponse,
  skillCreated: keyedAnswer('skill', skillResponse),
  skillList,
  skillDeleted: deletedSkillResponse,
  taskHall: taskHallResponse,
  taskPublished: keyedAnswer('task', taskResponse).extend({ agent_budget: agentBudgetLeft }),
  application: keyedAnswer('application', applicationResponse),
  applicationList,
  applicationAccepted: keyedAnswer('accepted', acceptedApplicationResponse).extend({ agent_budget: agentBudgetLeft }),
};
