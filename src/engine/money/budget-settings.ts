import { agentBudgetLimits } from '../../domain/agent-budgets.ts';
import { type Currency, formatAmount } from '../../domain/money.ts';
import type { AgentBudgetInput, AgentBudgetView } from '../../schemas/agent-budgets.ts';
import * as store from '../../store/agent-budgets.ts';
import { findApiKeyById } from '../../store/identity.ts';
import { authorize, manageAgentBudget } from '../access/index.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';
import { amountOrNull, dayOf, leftOf, resetsAt } from './budget-bounds.ts';

/**
 * An agent budget as a person sets it on their key and as both they and the key's agent see it,
 * with what the key has spent and has left today. The charges counted against it are budgets.ts.
 */
export function agentBudgetView(row: store.AgentBudgetRow, spent: bigint, at: Date): AgentBudgetView {
  return {
    api_key_id: row.api_key_id,
    currency: row.currency as Currency,
    per_purchase_max: row.per_purchase_max === null ? null : formatAmount(row.per_purchase_max),
    daily_max: row.daily_max === null ? null : formatAmount(row.daily_max),
    categories: row.categories,
    capability_ids: row.capability_ids,
    spent_today: formatAmount(spent),
    left_today: amountOrNull(leftOf(row, spent)),
    resets_at: resetsAt(at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}

/** Set, read and clear a key's budget (the person's), and show what is left (the agent's answers). */
export function createAgentBudgets({ db, now }: EngineDependencies) {
  async function ownedKey(principal: Principal, keyId: string) {
    return authorize(manageAgentBudget, principal, await findApiKeyById(db, keyId), 'API key');
  }

  async function viewOf(row: store.AgentBudgetRow | undefined, at: Date): Promise<AgentBudgetView | null> {
    if (!row) return null;
    return agentBudgetView(row, await store.spentOn(db, { keyId: row.api_key_id, currency: row.currency, day: dayOf(at) }), at);
  }

  async function get(principal: Principal, keyId: string) {
    const key = await ownedKey(principal, keyId);
    return { api_key_id: key.id, budget: await viewOf(await store.findAgentBudget(db, key.id), now()) };
  }

  async function set(principal: Principal, keyId: string, input: AgentBudgetInput): Promise<AgentBudgetView> {
    const key = await ownedKey(principal, keyId);
    const at = now();
    const saved = await store.saveAgentBudget(db, { api_key_id: key.id, ...agentBudgetLimits(input), updated_at: at });
    return (await viewOf(saved, at))!;
  }

  async function clear(principal: Principal, keyId: string) {
    const key = await ownedKey(principal, keyId);
    await store.deleteAgentBudget(db, key.id);
    return { api_key_id: key.id, budget: null };
  }

  /** What is left of the calling key's budget, for its answers; null when no budget bounds it. */
  async function left(principal: Principal): Promise<AgentBudgetView | null> {
    if (!principal.budget_key_id) return null;
    return viewOf(await store.findAgentBudget(db, principal.budget_key_id), now());
  }

  /** The key list's items, each with its budget (null: none). */
  async function withBudgets<Item extends { id: string }>(items: Item[]): Promise<(Item & { budget: AgentBudgetView | null })[]> {
    const at = now();
    const ids = items.map((item) => item.id);
    const [rows, spent] = await Promise.all([store.budgetsOfKeys(db, ids), store.spentByKeys(db, ids, dayOf(at))]);
    const byKey = new Map(rows.map((row) => [row.api_key_id, row]));
    return items.map((item) => {
      const row = byKey.get(item.id);
      return { ...item, budget: row ? agentBudgetView(row, spent.get(`${row.api_key_id}:${row.currency}`) ?? 0n, at) : null };
    });
  }

  return { get, set, clear, left, withBudgets };
}

export type AgentBudgets = ReturnType<typeof createAgentBudgets>;
