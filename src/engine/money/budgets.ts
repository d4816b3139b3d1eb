import type { Knex } from 'knex';
import { type Currency, currencyOfSpace } from '../../domain/money.ts';
import type { AppError } from '../../errors.ts';
import * as store from '../../store/agent-budgets.ts';
import type { CapabilityRow } from '../../store/capabilities.ts';
import type { BudgetTake } from '../../store/change.ts';
import type { Principal } from '../common/index.ts';
import { assertPerCharge, type BudgetCharge, budgetFor, dayOf, leftOf, maybe, refusal } from './budget-bounds.ts';

/**
 * Agent budgets (docs/decisions/money-and-escrow.md "Agent budgets"): what a person lets one of
 * their own keys (a device or MCP grant) spend. A charge is checked in the database transaction
 * that freezes or holds the money, beside the freeze: the per-purchase bound and the categories
 * or capabilities allowed on the budget row, the day's bound by a compare-and-set on the key's
 * usage row for the UTC day, which stays locked until that transaction ends, so parallel charges
 * of one key are decided one after the other on the sum each left. A refusal (4021) throws, the
 * database transaction rolls back, and nothing moves. A party's freeze instead takes its charge in
 * the freeze's own statement, which group commit batches (planFreezeCharge; "Group commit and
 * agent budgets"). What each purchase or task was charged is recorded, so a release gives back
 * exactly that, to the day it was charged to.
 */

/**
 * A look before a purchase is created, so that one the budget already refuses creates nothing:
 * reads only. The freeze checks again and decides (chargeAgentBudget).
 */
export async function checkAgentBudget(db: Knex, principal: Principal, charge: BudgetCharge): Promise<void> {
  const row = await budgetFor(db, principal, charge.currency);
  if (!row) return;
  const usage = { keyId: row.api_key_id, currency: row.currency, day: dayOf(charge.at) };
  await assertPerCharge(db, row, charge, usage);
  const spent = await store.spentOn(db, usage);
  const left = leftOf(row, spent);
  if (left !== null && charge.amount > left) throw refusal('daily', row, charge, spent);
}

/** The look before a purchase of `capability` at `price` (per_purchase_max, what is allowed, what is left today). */
export function checkPurchase(db: Knex, principal: Principal, capability: Pick<CapabilityRow, 'id' | 'category'>, price: bigint, at: Date): Promise<void> {
  if (!principal.budget_key_id) return Promise.resolve();
  const charge = { amount: price, price, currency: currencyOfSpace(principal.caller_type), category: capability.category, capabilityId: capability.id };
  return checkAgentBudget(db, principal, { ...charge, refId: capability.id, at });
}

/**
 * Takes the charge from the caller's budget in `trx`, the database transaction that freezes or
 * holds the money, or refuses with 4021 (nothing taken). A caller without a budget passes.
 */
export async function chargeAgentBudget(trx: Knex, principal: Principal, charge: BudgetCharge): Promise<void> {
  const row = await budgetFor(trx, principal, charge.currency);
  if (!row) return;
  const usage = { keyId: row.api_key_id, currency: row.currency, day: dayOf(charge.at) };
  await assertPerCharge(trx, row, charge, usage);
  if (charge.amount === 0n) return;
  const taken = await store.takeBudgetUsage(trx, usage, charge.amount, maybe(row.daily_max));
  if (taken === null) throw refusal('daily', row, charge, await store.spentOn(trx, usage));
  await store.recordCharge(trx, charge.refId, usage, charge.amount);
}

/**
 * A freeze's budget charge taken in the statement of the freeze itself (store/change.ts, so that
 * it can share a group commit): the take of the day's usage row, and the 4021 to answer when the
 * day's bound refuses it there. Checked here, on the budget row: what the budget allows and
 * per_purchase_max (4021 at once). Only a buyer's freeze of a transaction in pending_freeze is
 * charged; anything else is left to the move, which refuses it in its own words.
 */
export async function planFreezeCharge(db: Knex, principal: Principal, transactionId: string, at: Date): Promise<FreezeCharge | undefined> {
  if (!principal.budget_key_id) return undefined;
  const [row] = (await db('transactions as t')
    .leftJoin('capabilities as c', 'c.id', 't.capability_id')
    .where('t.id', transactionId)
    .select('t.price', 't.currency', 't.status', 't.buyer_user_id', 't.capability_id', 'c.category')) as {
    price: string;
    currency: Currency;
    status: string;
    buyer_user_id: string;
    capability_id: string | null;
    category: string | null;
  }[];
  if (row?.status !== 'pending_freeze' || row.buyer_user_id !== principal.user_id) return undefined;
  const price = BigInt(row.price);
  return planCharge(db, principal, {
    amount: price,
    price,
    currency: row.currency,
    category: row.category,
    capabilityId: row.capability_id,
    refId: transactionId,
    at,
  });
}

/** The per-charge bounds checked on the budget row (4021 at once), and the take the statement decides on the day's bound. */
async function planCharge(db: Knex, principal: Principal, charge: BudgetCharge): Promise<FreezeCharge | undefined> {
  const budget = await budgetFor(db, principal, charge.currency);
  if (!budget) return undefined;
  const usage = { keyId: budget.api_key_id, currency: budget.currency, day: dayOf(charge.at) };
  await assertPerCharge(db, budget, charge, usage);
  if (charge.amount === 0n) return undefined;
  return {
    take: { ...usage, amount: charge.amount, dailyMax: maybe(budget.daily_max), refId: charge.refId },
    refuse: async () => refusal('daily', budget, charge, await store.spentOn(db, usage)),
  };
}

export interface FreezeCharge {
  take: BudgetTake;
  /** The 4021 of the day's bound, with what is left as it is when answered. */
  refuse(): Promise<AppError>;
}

/**
 * The charge of a purchase about to be inserted already frozen (an invoke's hold), taken in the
 * insert's own statement like a freeze's (store/change.ts): checked here, on the budget row, for
 * what the budget allows and per_purchase_max (4021 at once); the day's bound is decided in the
 * statement. Undefined when no budget bounds the caller or the purchase is free.
 */
export async function planPurchaseCharge(
  db: Knex,
  principal: Principal,
  purchase: { id: string; price: string; currency: Currency },
  capability: Pick<CapabilityRow, 'id' | 'category'>,
  at: Date,
): Promise<FreezeCharge | undefined> {
  if (!principal.budget_key_id) return undefined;
  const price = BigInt(purchase.price);
  return planCharge(db, principal, {
    amount: price,
    price,
    currency: purchase.currency,
    category: capability.category,
    capabilityId: capability.id,
    refId: purchase.id,
    at,
  });
}

/**
 * The charge of a task's hold growing from `held` to `bounty` in one statement (a publish,
 * engine/work/task-publish.ts, where `held` is 0; a raised bounty, task-update.ts): the
 * difference, with the whole bounty bounded by per_purchase_max here (4021 at once) and the day
 * in the statement, as chargeBounty charges in a transaction.
 */
export function planBountyCharge(
  db: Knex,
  principal: Principal,
  task: { id: string; bounty_currency: Currency; category: string | null },
  bounty: bigint,
  at: Date,
  held = 0n,
): Promise<FreezeCharge | undefined> {
  // Without a rise nothing more is held, so nothing is charged or refused (as chargeBounty).
  if (!principal.budget_key_id || bounty <= held) return Promise.resolve(undefined);
  return planCharge(db, principal, {
    amount: bounty - held,
    price: bounty,
    currency: task.bounty_currency,
    category: task.category,
    capabilityId: null,
    refId: task.id,
    at,
  });
}

/**
 * The charge of an application accepted in one statement (engine/work/task-acceptance.ts): the
 * part of the price beyond the hold, by the transaction's reference, with the whole price bounded
 * by per_purchase_max here (4021 at once) and the day in the statement, as chargeAcceptance
 * charges in a transaction. The task's charges move to the transaction in the statement.
 */
export function planAcceptanceCharge(
  db: Knex,
  principal: Principal,
  accepted: { transactionId: string; price: bigint; held: bigint; currency: Currency; category: string | null; at: Date },
): Promise<FreezeCharge | undefined> {
  if (!principal.budget_key_id) return Promise.resolve(undefined);
  const beyond = accepted.price > accepted.held ? accepted.price - accepted.held : 0n;
  const { price, currency, category, at } = accepted;
  return planCharge(db, principal, { amount: beyond, price, currency, category, capabilityId: null, refId: accepted.transactionId, at });
}

/**
 * An application accepted: the bounty's hold becomes the transaction's freeze. What the task was
 * charged moves to the transaction (a released price gives it back), a price below the hold gives
 * back the difference, and only the part of the price beyond the hold is a new charge; the whole
 * price is what per_purchase_max bounds.
 */
export async function chargeAcceptance(
  trx: Knex,
  principal: Principal,
  accepted: { taskId: string; transactionId: string; price: bigint; held: bigint; currency: Currency; category: string | null; at: Date },
): Promise<void> {
  if (accepted.price < accepted.held) await store.giveBackPart(trx, accepted.taskId, accepted.held - accepted.price);
  await store.moveCharges(trx, accepted.taskId, accepted.transactionId);
  const beyond = accepted.price > accepted.held ? accepted.price - accepted.held : 0n;
  const charge = { amount: beyond, price: accepted.price, currency: accepted.currency, category: accepted.category, capabilityId: null, at: accepted.at };
  await chargeAgentBudget(trx, principal, { ...charge, refId: accepted.transactionId });
}

/**
 * A task's bounty hold moving from `held` to `wanted`: a rise is charged (the whole bounty is what
 * per_purchase_max bounds), a fall gives back up to what the task was charged.
 */
export async function chargeBounty(
  trx: Knex,
  principal: Principal,
  task: { id: string; bounty_currency: Currency; category: string | null },
  held: bigint,
  wanted: bigint,
  at: Date,
): Promise<void> {
  if (wanted < held) return giveBackAgentBudget(trx, task.id, held - wanted);
  if (wanted === held) return;
  const charge = { amount: wanted - held, price: wanted, currency: task.bounty_currency, category: task.category, capabilityId: null, at };
  await chargeAgentBudget(trx, principal, { ...charge, refId: task.id });
}

/**
 * Gives back what `refId` was charged: all of it (a purchase released, a task's hold ended), or
 * at most `amount` (a bounty lowered). A budget removed since changes nothing here.
 */
export async function giveBackAgentBudget(db: Knex, refId: string, amount?: bigint): Promise<void> {
  if (amount === undefined) await store.giveBackAll(db, refId);
  else if (amount > 0n) await store.giveBackPart(db, refId, amount);
}
