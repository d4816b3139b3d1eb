import type { Knex } from 'knex';

/**
 * A task's `delivery_hours` is the delivery period its publisher asked for, and the escrow
 * transaction made when an application is accepted carries it as one of its terms: the seller's
 * acceptance sets `delivery_deadline` that many hours ahead, after which the buyer may cancel
 * (shared decisions 4). It was left out, so every task transaction got the default of 72 hours
 * (`DELIVERY_DEADLINE_HOURS`): a one-hour job could not be cancelled for three days. It is a
 * column of its own rather than `booked_hours`, which prices per-hour purchases. Nullable without
 * a default, so adding it rewrites nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions ADD COLUMN IF NOT EXISTS delivery_hours integer');
  await knex.raw('ALTER TABLE transactions ADD CONSTRAINT transactions_delivery_hours_positive CHECK (delivery_hours >= 1) NOT VALID');
  await knex.raw('ALTER TABLE transactions VALIDATE CONSTRAINT transactions_delivery_hours_positive');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE transactions DROP COLUMN IF EXISTS delivery_hours');
}
