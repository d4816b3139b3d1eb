import type { Knex } from 'knex';

/**
 * A purchase of a capability with a `daily_limit` takes a unit of its UTC day when it is created
 * (docs/decisions/limits-and-storage.md "A capability's own limits"). One cancelled before it was
 * ever frozen now gives that unit back, so unpaid purchases a buyer gave up stop holding the
 * seller's day from everyone else. The column says which day's unit the purchase took (null: none,
 * as when the capability had no daily_limit then), so a give-back never frees a unit that was not
 * taken. Nullable without a default, so adding it rewrites nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions ADD COLUMN IF NOT EXISTS counted_day_start timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions DROP COLUMN IF EXISTS counted_day_start');
}
