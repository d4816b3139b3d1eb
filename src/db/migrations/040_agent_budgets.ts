import type { Knex } from 'knex';

/**
 * Agent budgets (issue 31, docs/decisions/money-and-escrow.md "Agent budgets"): what a person
 * lets one of their own keys (a device or MCP grant) spend.
 *
 * `agent_budgets`: one row per key, in the currency of the space the key spends in: at most
 * `per_purchase_max` per charge and `daily_max` per UTC day (minor units; null: no bound), and
 * optionally only some categories or capabilities (jsonb arrays; null: any).
 *
 * `agent_budget_usage`: what a key was charged on one UTC day, as one row per (key, currency, day)
 * that a charge moves with a compare-and-set (`spent + x <= daily_max`), so parallel charges of
 * one key can never pass the day's bound together. The day is text (YYYY-MM-DD, UTC): a `date`
 * would be read back as a local midnight.
 *
 * `agent_budget_charges`: what each purchase or task was charged to which key and day, so that a
 * release (cancel, reject, fail, refund; a task closed or expired) gives back exactly that.
 *
 * `demands.budget_key_id` and `task_pushes.budget_key_id`: the key that made a demand with
 * auto_accept, or a selection, so the purchase they make later is charged to its budget.
 * `oauth_requests.agent_budget` and `device_authorizations.agent_budget`: the budget a person chose
 * on the consent or approval page, applied to the key when the grant issues it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_budgets', (table) => {
    table.uuid('api_key_id').primary().references('api_keys.id').onDelete('CASCADE');
    table.string('currency', 8).notNullable();
    table.bigInteger('per_purchase_max').nullable();
    table.bigInteger('daily_max').nullable();
    table.jsonb('categories').nullable();
    table.jsonb('capability_ids').nullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE agent_budgets
    ADD CONSTRAINT agent_budgets_bounds CHECK ((per_purchase_max IS NULL OR per_purchase_max >= 0) AND (daily_max IS NULL OR daily_max >= 0))`);
  await knex.schema.createTable('agent_budget_usage', (table) => {
    table.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    table.string('currency', 8).notNullable();
    table.string('day', 10).notNullable();
    table.bigInteger('spent').notNullable();
    table.primary(['api_key_id', 'currency', 'day']);
  });
  await knex.raw('ALTER TABLE agent_budget_usage ADD CONSTRAINT agent_budget_usage_spent CHECK (spent >= 0)');
  await knex.schema.createTable('agent_budget_charges', (table) => {
    table.uuid('ref_id').notNullable();
    table.uuid('api_key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    table.string('currency', 8).notNullable();
    table.string('day', 10).notNullable();
    table.bigInteger('amount').notNullable();
    table.primary(['ref_id', 'api_key_id', 'currency', 'day']);
  });
  await knex.raw('ALTER TABLE agent_budget_charges ADD CONSTRAINT agent_budget_charges_amount CHECK (amount > 0)');
  await knex.raw('CREATE INDEX agent_budget_usage_day ON agent_budget_usage (day)');
  await knex.raw('CREATE INDEX agent_budget_charges_day ON agent_budget_charges (day)');
  await knex.schema.alterTable('demands', (table) => {
    table.uuid('budget_key_id').nullable().references('api_keys.id').onDelete('SET NULL');
  });
  await knex.schema.alterTable('task_pushes', (table) => {
    table.uuid('budget_key_id').nullable().references('api_keys.id').onDelete('SET NULL');
  });
  await knex.schema.alterTable('oauth_requests', (table) => {
    table.jsonb('agent_budget').nullable();
  });
  await knex.schema.alterTable('device_authorizations', (table) => {
    table.jsonb('agent_budget').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('device_authorizations', (table) => table.dropColumn('agent_budget'));
  await knex.schema.alterTable('oauth_requests', (table) => table.dropColumn('agent_budget'));
  await knex.schema.alterTable('task_pushes', (table) => table.dropColumn('budget_key_id'));
  await knex.schema.alterTable('demands', (table) => table.dropColumn('budget_key_id'));
  for (const table of ['agent_budget_charges', 'agent_budget_usage', 'agent_budgets']) await knex.schema.dropTableIfExists(table);
}
