import type { Knex } from 'knex';

/**
 * Caps on subscriptions per user and per API key, and a dispatcher whose cost per event is the
 * event's own subscriptions (issue 28 point 5, docs/webhooks.md "Bounds").
 *
 * `api_key_id` records the key a subscription was made with (null for a JWT or a person), so the
 * subscriptions of all the users of one auto-provisioning key can be counted together. Rows made
 * before this migration have none and count for their user only.
 *
 * `webhook_subscriptions_owner_kind` serves both the caps' counts (a user's live webhooks or push
 * configs in one space) and the dispatcher's read of the webhooks of an event's parties, which
 * no longer walks past the push configs those parties own: their push configs are found by their
 * task through `webhook_subscriptions_a2a_config` (migration 027, led by `a2a_task_id`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_subscriptions', (table) => {
    table.uuid('api_key_id').nullable().references('api_keys.id').onDelete('SET NULL');
  });
  await knex.raw('CREATE INDEX webhook_subscriptions_owner_kind ON webhook_subscriptions (owner_user_id, kind, owner_type) WHERE deleted_at IS NULL');
  await knex.raw('CREATE INDEX webhook_subscriptions_api_key ON webhook_subscriptions (api_key_id, kind) WHERE deleted_at IS NULL AND api_key_id IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS webhook_subscriptions_api_key');
  await knex.raw('DROP INDEX IF EXISTS webhook_subscriptions_owner_kind');
  await knex.schema.alterTable('webhook_subscriptions', (table) => table.dropColumn('api_key_id'));
}
