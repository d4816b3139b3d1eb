import type { Knex } from 'knex';

/**
 * Money and escrow. Balances are integer minor units (hundredths) in bigint columns. The CHECK
 * constraints are the last line of defence: even a bug in the engine cannot make a user's
 * balance negative. Only the external (deposit counterpart) account may go below zero, which
 * is what lets every currency sum to exactly zero.
 */
export async function up(knex: Knex): Promise<void> {
  await createAccounts(knex);
  await createLedger(knex);
  await createCapabilities(knex);
  await createTransactions(knex);
  await createEvents(knex);
  await createIdempotencyKeys(knex);
}

async function createAccounts(knex: Knex) {
  await knex.schema.createTable('accounts', (table) => {
    table.uuid('id').primary();
    table.string('kind', 16).notNullable(); // user | platform_fee | external
    table.uuid('owner_user_id').nullable().references('users.id');
    table.string('currency', 3).notNullable(); // UT | CNY
    table.bigInteger('available').notNullable().defaultTo(0);
    table.bigInteger('frozen').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.unique(['owner_user_id', 'currency']);
  });
  await knex.raw(`ALTER TABLE accounts
    ADD CONSTRAINT accounts_kind_valid CHECK (kind IN ('user', 'platform_fee', 'external')),
    ADD CONSTRAINT accounts_currency_valid CHECK (currency IN ('UT', 'CNY')),
    ADD CONSTRAINT accounts_owner_matches_kind CHECK ((kind = 'user') = (owner_user_id IS NOT NULL)),
    ADD CONSTRAINT accounts_available_not_negative CHECK (kind = 'external' OR available >= 0),
    ADD CONSTRAINT accounts_frozen_not_negative CHECK (frozen >= 0)`);
  await knex.raw(`CREATE UNIQUE INDEX accounts_system_unique ON accounts (kind, currency) WHERE kind <> 'user'`);
}

async function createLedger(knex: Knex) {
  await knex.schema.createTable('ledger_entries', (table) => {
    table.bigIncrements('id').primary();
    table.uuid('movement_id').notNullable();
    table.uuid('account_id').notNullable().references('accounts.id');
    table.string('currency', 3).notNullable();
    table.string('bucket', 9).notNullable(); // available | frozen
    table.string('type', 16).notNullable();
    table.bigInteger('amount').notNullable();
    table.bigInteger('balance_after').notNullable();
    table.string('description', 200).notNullable();
    table.string('biz_ref_id', 64).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['account_id', 'id']);
    table.index(['movement_id']);
  });
  await knex.raw(`ALTER TABLE ledger_entries
    ADD CONSTRAINT ledger_bucket_valid CHECK (bucket IN ('available', 'frozen')),
    ADD CONSTRAINT ledger_amount_not_zero CHECK (amount <> 0)`);
  // Entries are append-only: history is never rewritten, corrections are new movements.
  await knex.raw(`CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'ledger entries are append-only'; END $$`);
  await knex.raw(`CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only()`);
}

async function createCapabilities(knex: Knex) {
  await knex.schema.createTable('capabilities', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable(); // agent | human
    table.string('title', 200).notNullable();
    table.text('description').notNullable();
    table.string('category', 50).notNullable();
    table.string('capability_type', 32).notNullable();
    table.string('pricing_model', 16).notNullable();
    table.bigInteger('price').notNullable().defaultTo(0);
    table.bigInteger('auto_accept_min').nullable();
    table.string('delivery_mode', 8).notNullable().defaultTo('instant');
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.integer('daily_limit').nullable();
    table.integer('rate_limit_per_min').nullable();
    table.text('callback_url').nullable();
    table.integer('callback_timeout_sec').notNullable().defaultTo(30);
    table.boolean('available').notNullable().defaultTo(true);
    table.decimal('quality_score', 4, 2).notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.index(['owner_user_id']);
  });
  await knex.raw(`ALTER TABLE capabilities ADD CONSTRAINT capabilities_price_not_negative CHECK (price >= 0)`);
}

async function createTransactions(knex: Knex) {
  await knex.schema.createTable('transactions', (table) => {
    table.uuid('id').primary();
    table.uuid('buyer_user_id').notNullable().references('users.id');
    table.uuid('seller_user_id').notNullable().references('users.id');
    table.uuid('capability_id').notNullable().references('capabilities.id');
    table.uuid('demand_id').nullable();
    table.uuid('context_id').notNullable();
    table.string('space', 5).notNullable(); // agent | human
    table.string('currency', 3).notNullable();
    table.string('transaction_type', 16).notNullable();
    table.bigInteger('price').notNullable();
    table.integer('booked_hours').nullable();
    // Decided at creation from the capability's auto_accept_min, so a later edit of the
    // capability cannot change the terms of a purchase already made.
    table.boolean('auto_accept').notNullable().defaultTo(false);
    table.string('status', 24).notNullable();
    table.text('note').nullable();
    table.jsonb('input').nullable();
    table.jsonb('result_payload').nullable();
    table.integer('event_sequence').notNullable().defaultTo(0);
    table.timestamp('frozen_at', { useTz: true }).nullable();
    table.timestamp('accepted_at', { useTz: true }).nullable();
    table.timestamp('delivered_at', { useTz: true }).nullable();
    table.timestamp('confirmed_at', { useTz: true }).nullable();
    table.timestamp('settled_at', { useTz: true }).nullable();
    table.timestamp('delivery_deadline', { useTz: true }).nullable();
    table.timestamp('auto_confirm_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
    table.index(['buyer_user_id', 'created_at', 'id']);
    table.index(['seller_user_id', 'created_at', 'id']);
    // total_sold is counted from here rather than kept on the capability row, which would be
    // a hot row every settlement of a popular capability has to lock.
    table.index(['capability_id', 'status']);
  });
  await knex.raw(`ALTER TABLE transactions
    ADD CONSTRAINT transactions_parties_differ CHECK (buyer_user_id <> seller_user_id),
    ADD CONSTRAINT transactions_price_not_negative CHECK (price >= 0)`);
  await knex.raw(`CREATE INDEX transactions_due_for_auto_confirm ON transactions (auto_confirm_at) WHERE status = 'delivered'`);
}

async function createEvents(knex: Knex) {
  // Per-owner event counters give each user's stream a gap-free order that survives reconnects.
  await knex.schema.createTable('event_streams', (table) => {
    table.uuid('owner_user_id').primary().references('users.id');
    table.bigInteger('last_sequence').notNullable().defaultTo(0);
  });
  await knex.schema.createTable('outbox_events', (table) => {
    table.bigIncrements('id').primary();
    table.uuid('transaction_id').notNullable().references('transactions.id');
    table.integer('transaction_sequence').notNullable();
    table.uuid('buyer_user_id').notNullable();
    table.bigInteger('buyer_sequence').notNullable();
    table.uuid('seller_user_id').notNullable();
    table.bigInteger('seller_sequence').notNullable();
    table.string('event_type', 48).notNullable();
    table.jsonb('payload').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('published_at', { useTz: true }).nullable();
    table.unique(['transaction_id', 'transaction_sequence']);
    table.index(['buyer_user_id', 'buyer_sequence']);
    table.index(['seller_user_id', 'seller_sequence']);
  });
  await knex.raw(`CREATE INDEX outbox_events_unpublished ON outbox_events (id) WHERE published_at IS NULL`);
}

async function createIdempotencyKeys(knex: Knex) {
  await knex.schema.createTable('idempotency_keys', (table) => {
    table.string('scope_hash', 64).primary();
    table.string('fingerprint', 64).notNullable();
    table.string('state', 10).notNullable(); // in_flight | completed
    table.integer('response_status').nullable();
    table.jsonb('response_body').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['idempotency_keys', 'outbox_events', 'event_streams', 'transactions', 'capabilities', 'ledger_entries', 'accounts']) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.raw('DROP FUNCTION IF EXISTS ledger_entries_append_only()');
}
