import type { Knex } from 'knex';
import type { Currency } from '../../domain/money.ts';
import { ensureUserAccounts, userAccountId } from '../../store/accounts.ts';
import { applyMovement, InsufficientBalance, type Leg } from '../../store/ledger.ts';

/**
 * A task's bounty as money (docs/tasks.md "Bounty money"): held by freezing it in the publisher's
 * own account (available -> frozen, one balanced movement with the task's id as its reference),
 * released by the reverse. `changeHold` moves the difference between what is held and what should
 * be: more freezes the difference, less releases it, equal writes nothing. It runs in the
 * caller's database transaction, inside a savepoint, so that a shortfall (the accounts CHECK
 * constraint failing the statement) leaves the transaction usable: the caller then keeps the task
 * a draft, or refuses the change, and says so with the numbers.
 */
export interface HoldChange {
  ownerId: string;
  currency: Currency;
  taskId: string;
  held: bigint;
  wanted: bigint;
  at: Date;
}

export type HoldOutcome = { ok: true } | { ok: false; available: bigint; required: bigint };

/** The movement from what is held to what should be: a freeze of the difference, or its release. */
export function bountyHoldLegs(change: Pick<HoldChange, 'ownerId' | 'currency' | 'taskId' | 'held' | 'wanted'>): Leg[] {
  const delta = change.wanted - change.held;
  const account = userAccountId(change.ownerId, change.currency);
  const type = delta > 0n ? 'freeze' : 'unfreeze';
  const description = delta > 0n ? `bounty of task ${change.taskId} held` : `bounty of task ${change.taskId} released`;
  return [
    { accountId: account, currency: change.currency, bucket: 'available', amount: -delta, type, description },
    { accountId: account, currency: change.currency, bucket: 'frozen', amount: delta, type, description },
  ];
}

export async function changeHold(trx: Knex, change: HoldChange): Promise<HoldOutcome> {
  if (change.wanted === change.held) return { ok: true };
  await ensureUserAccounts(trx, [change.ownerId]);
  try {
    await trx.transaction(async (savepoint) => {
      await applyMovement(savepoint, bountyHoldLegs(change), change.taskId, change.at);
    });
    return { ok: true };
  } catch (error) {
    if (!(error instanceof InsufficientBalance)) throw error;
    const [account] = (await trx('accounts')
      .where({ id: userAccountId(change.ownerId, change.currency) })
      .select('available')) as { available: string }[];
    return { ok: false, available: BigInt(account?.available ?? 0), required: change.wanted - change.held };
  }
}
