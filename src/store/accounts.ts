import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Currency } from '../domain/money.ts';

/**
 * Account ids are derived from (owner, currency), so the engine never looks an account up before
 * locking it: one round trip fewer on every money movement.
 */
export type AccountKind = 'user' | 'platform_fee' | 'external';

function uuidFromText(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  // Shaped as a version-5-style UUID so it passes UUID validation everywhere.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export const userAccountId = (userId: string, currency: Currency) => uuidFromText(`account:user:${userId}:${currency}`);
export const systemAccountId = (kind: Exclude<AccountKind, 'user'>, currency: Currency) => uuidFromText(`account:${kind}:${currency}`);

export interface AccountRow {
  id: string;
  kind: AccountKind;
  owner_user_id: string | null;
  currency: Currency;
  available: string;
  frozen: string;
}

/** Creates both accounts of each user (and the event stream row) if missing; safe to repeat. */
export async function ensureUserAccounts(trx: Knex, userIds: string[]): Promise<void> {
  const rows = userIds.flatMap((userId) =>
    (['UT', 'CNY'] as const).map((currency) => ({ id: userAccountId(userId, currency), kind: 'user', owner_user_id: userId, currency })),
  );
  await trx('accounts').insert(rows).onConflict('id').ignore();
  await trx('event_streams')
    .insert(userIds.map((id) => ({ owner_user_id: id })))
    .onConflict('owner_user_id')
    .ignore();
}
