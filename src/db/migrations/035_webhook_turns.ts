import type { Knex } from 'knex';

/**
 * Fair sending (issue 28 point 6, docs/webhooks.md "Delivery"): the sender's claim takes due
 * deliveries owner by owner in turn. It finds the subscriptions with a queue by skipping through
 * this index (one probe per such subscription, however long its queue), then reads the first due
 * deliveries of each in order of their next attempt, from the same index: a claim's cost is the
 * number of subscriptions waiting, not the number of deliveries waiting.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE INDEX webhook_deliveries_turns ON webhook_deliveries (subscription_id, next_attempt_at, id) WHERE status IN ('pending', 'sending')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS webhook_deliveries_turns');
}
