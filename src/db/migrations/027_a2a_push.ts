import type { Knex } from 'knex';

/**
 * A2A push notification configs (issue 19 point 2, docs/webhooks.md "A2A push notifications")
 * are subscriptions of the webhook pipeline: the same rows, dispatcher, sender, retries and
 * delivery log, with `kind = 'a2a_push'` and the A2A fields beside. A config belongs to one A2A
 * task (a conversation or a purchase, `a2a_task_id`), keeps the name the client used for it
 * (`a2a_task_name`: a v0.1 client id stays that client's id in every body) and its own id, unique
 * per task and owner among the live ones.
 *
 * A v1.0 push body is one stream response, so one event may make two deliveries (the delivered
 * artifact, then the status): `part` orders them within their event.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_subscriptions', (table) => {
    table.string('kind', 10).notNullable().defaultTo('webhook');
    table.string('a2a_generation', 5).nullable();
    table.uuid('a2a_task_id').nullable();
    table.text('a2a_task_name').nullable();
    table.text('a2a_config_id').nullable();
    table.text('a2a_token').nullable();
    table.text('a2a_auth_scheme').nullable();
    table.text('a2a_auth_credentials').nullable();
  });
  await knex.raw(`ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_kind CHECK (kind IN ('webhook', 'a2a_push'))`);
  await knex.raw(
    `ALTER TABLE webhook_subscriptions ADD CONSTRAINT webhook_subscriptions_a2a_fields CHECK (kind = 'webhook' OR (a2a_generation IN ('v0.1', 'v0.3', 'v1.0') AND a2a_task_id IS NOT NULL AND a2a_task_name IS NOT NULL AND a2a_config_id IS NOT NULL))`,
  );
  await knex.raw(
    `CREATE UNIQUE INDEX webhook_subscriptions_a2a_config ON webhook_subscriptions (a2a_task_id, owner_user_id, owner_type, a2a_config_id) WHERE kind = 'a2a_push' AND deleted_at IS NULL`,
  );
  await knex.raw(`CREATE INDEX webhook_subscriptions_a2a_created ON webhook_subscriptions (created_at) WHERE kind = 'a2a_push' AND deleted_at IS NULL`);

  await knex.schema.alterTable('webhook_deliveries', (table) => {
    table.smallint('part').notNullable().defaultTo(0);
  });
  await knex.raw('DROP INDEX webhook_deliveries_once');
  await knex.raw(`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (subscription_id, source, source_event_id, part) WHERE source <> 'ping'`);
  await knex.raw('DROP INDEX webhook_deliveries_queue');
  await knex.raw(
    `CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (subscription_id, ordering_key, source_event_id, part) WHERE status IN ('pending', 'sending')`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX webhook_deliveries_queue');
  await knex.raw(
    `CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (subscription_id, ordering_key, source_event_id) WHERE status IN ('pending', 'sending')`,
  );
  await knex.raw('DROP INDEX webhook_deliveries_once');
  await knex('webhook_deliveries').where('part', '>', 0).del();
  await knex.raw(`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (subscription_id, source, source_event_id) WHERE source <> 'ping'`);
  await knex.schema.alterTable('webhook_deliveries', (table) => table.dropColumn('part'));
  await knex('webhook_subscriptions').where({ kind: 'a2a_push' }).del();
  await knex.raw('DROP INDEX IF EXISTS webhook_subscriptions_a2a_created');
  await knex.raw('DROP INDEX IF EXISTS webhook_subscriptions_a2a_config');
  await knex.raw('ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_a2a_fields');
  await knex.raw('ALTER TABLE webhook_subscriptions DROP CONSTRAINT webhook_subscriptions_kind');
  await knex.schema.alterTable('webhook_subscriptions', (table) => {
    for (const column of ['kind', 'a2a_generation', 'a2a_task_id', 'a2a_task_name', 'a2a_config_id', 'a2a_token', 'a2a_auth_scheme', 'a2a_auth_credentials'])
      table.dropColumn(column);
  });
}
