import type { Knex } from 'knex';
import { type Currency, formatAmount } from '../../domain/money.ts';
import { usageWindow } from '../../domain/usage-windows.ts';
import { AppError } from '../../errors.ts';
import * as store from '../../store/agent-budgets.ts';
import type { Principal } from '../common/index.ts';

/**
 * The bounds of an agent budget that one charge meets, and the refusal (4021) that names the bound
 * it broke with what is left. Taking a charge, and giving it back, is budgets.ts; setting a budget
 * and showing it is budget-settings.ts.
 */
export interface BudgetCharge {
  /** What the charge adds to the day's spending (at an accept: the part of the price beyond the bounty held). */
  amount: bigint;
  /** The purchase's price, or the bounty: what per_purchase_max bounds. */
  price: bigint;
  currency: Currency;
  category: string | null;
  capabilityId: string | null;
  /** The transaction or task the charge is for (what a release of it gives back). */
  refId: string;
  at: Date;
}

type Bound = 'per_purchase' | 'daily' | 'allowed';

/** The UTC day a charge counts in, as the usage rows name it (YYYY-MM-DD). */
export const dayOf = (at: Date) => at.toISOString().slice(0, 10);
export const resetsAt = (at: Date) => usageWindow('day', at).end;
export const maybe = (value: string | null) => (value === null ? null : BigInt(value));
export const amountOrNull = (value: bigint | null) => (value === null ? null : formatAmount(value));

export function leftOf(row: store.AgentBudgetRow, spent: bigint): bigint | null {
  const daily = maybe(row.daily_max);
  if (daily === null) return null;
  return daily > spent ? daily - spent : 0n;
}

/** Whether a charge is of what the budget allows: no list set, or its capability or category named. */
function allows(row: store.AgentBudgetRow, charge: Pick<BudgetCharge, 'category' | 'capabilityId'>): boolean {
  if (row.categories === null && row.capability_ids === null) return true;
  if (charge.capabilityId !== null && (row.capability_ids ?? []).includes(charge.capabilityId)) return true;
  return charge.category !== null && (row.categories ?? []).includes(charge.category);
}

const sentences: Record<Bound, (row: store.AgentBudgetRow, charge: BudgetCharge, left: string | null) => string> = {
  per_purchase: (row, charge) =>
    `this agent key may spend at most ${formatAmount(row.per_purchase_max!)} ${row.currency} per purchase (its owner's budget); this one is ${formatAmount(charge.price)}`,
  daily: (row, charge, left) =>
    `this agent key may spend ${formatAmount(row.daily_max!)} ${row.currency} a day (UTC, its owner's budget) and has ${left} left today; this needs ${formatAmount(charge.amount)}`,
  allowed: () => "this agent key may buy only the categories or capabilities its owner's budget names, and this is not one of them",
};

export function refusal(bound: Bound, row: store.AgentBudgetRow, charge: BudgetCharge, spent: bigint): AppError {
  const left = amountOrNull(leftOf(row, spent));
  const detail = `${sentences[bound](row, charge, left)}: nothing was charged. The person who owns the key can change its budget.`;
  return new AppError('agent_budget_exceeded', detail, {
    budget: bound,
    api_key_id: row.api_key_id,
    currency: row.currency,
    price: formatAmount(charge.price),
    amount: formatAmount(charge.amount),
    per_purchase_max: amountOrNull(maybe(row.per_purchase_max)),
    daily_max: amountOrNull(maybe(row.daily_max)),
    categories: row.categories,
    capability_ids: row.capability_ids,
    spent_today: formatAmount(spent),
    left_today: left,
    resets_at: resetsAt(charge.at).toISOString(),
    detail,
  });
}

/** The budget that bounds this caller's charge in this currency, or undefined when none does. */
export async function budgetFor(db: Knex, principal: Principal, currency: Currency) {
  const keyId = principal.budget_key_id;
  if (!keyId) return undefined;
  const row = await store.findAgentBudget(db, keyId);
  return row?.currency === currency ? row : undefined;
}

/** The bounds one charge meets on its own: what the budget allows, and per_purchase_max. */
export async function assertPerCharge(db: Knex, row: store.AgentBudgetRow, charge: BudgetCharge, usage: store.UsageKey): Promise<void> {
  const perPurchase = maybe(row.per_purchase_max);
  const bound: Bound | null = !allows(row, charge) ? 'allowed' : perPurchase !== null && charge.price > perPurchase ? 'per_purchase' : null;
  if (bound !== null) throw refusal(bound, row, charge, await store.spentOn(db, usage));
}
