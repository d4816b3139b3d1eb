import type { Knex } from 'knex';
import { systemAccountId } from '../../store/accounts.ts';

/**
 * The platform fee account and the external (deposit counterpart) account of each currency are
 * fixed data, so they are created with the schema rather than by the running engine: a database
 * that `npm run migrate` prepared is complete before any server starts.
 */
const currencies = ['UT', 'CNY'] as const;
const kinds = ['platform_fee', 'external'] as const;

export async function up(knex: Knex): Promise<void> {
  const rows = kinds.flatMap((kind) => currencies.map((currency) => ({ id: systemAccountId(kind, currency), kind, owner_user_id: null, currency })));
  await knex('accounts').insert(rows).onConflict('id').ignore();
}

export async function down(): Promise<void> {
  // The accounts carry ledger history once used; they are never removed.
}
