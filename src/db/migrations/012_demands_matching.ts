import type { Knex } from 'knex';

/**
 * Demands, and the search columns that let the database find match candidates through an index
 * (docs/matching.md). Chinese has no spaces between words, so `market_search_text` rewrites every
 * run of CJK characters as its overlapping two-character pieces ("翻译服务" -> "翻译 译服 服务")
 * and lower-cases the rest; PostgreSQL's English text-search configuration then stems the English
 * words and keeps each piece as a word of its own. Tested on PostgreSQL 15 and PGlite, which give
 * the same vectors (the text-search parser treats non-ASCII letters as letters in every locale).
 *
 * The capability column is GENERATED, so every code path that writes a capability (create,
 * update, batch) keeps it current without knowing it exists. Title and tags weigh more (A) than
 * the description (B).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE FUNCTION market_search_text(source text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
    DECLARE
      run text;
      pieces text := '';
      position integer;
    BEGIN
      IF source IS NULL THEN RETURN ''; END IF;
      FOR run IN SELECT (regexp_matches(lower(source), '[\\u3400-\\u9fff\\uf900-\\ufaff]+', 'g'))[1] LOOP
        IF char_length(run) = 1 THEN
          pieces := pieces || ' ' || run;
        ELSE
          FOR position IN 1 .. char_length(run) - 1 LOOP
            pieces := pieces || ' ' || substr(run, position, 2);
          END LOOP;
        END IF;
      END LOOP;
      RETURN regexp_replace(lower(source), '[\\u3400-\\u9fff\\uf900-\\ufaff]+', ' ', 'g') || pieces;
    END $$`);
  await knex.raw(`ALTER TABLE capabilities ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, market_search_text(title || ' ' || (tags::text))), 'A')
      || setweight(to_tsvector('english'::regconfig, market_search_text(description)), 'B')
    ) STORED`);
  await knex.raw('CREATE INDEX capabilities_search_vector ON capabilities USING gin (search_vector)');
  await createDemands(knex);
}

async function createDemands(knex: Knex) {
  await knex.schema.createTable('demands', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable(); // agent | human
    table.string('title', 200).nullable();
    table.text('description').notNullable();
    table.string('category', 50).nullable();
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.bigInteger('max_price').nullable();
    table.boolean('auto_accept').notNullable().defaultTo(false);
    table.string('demand_type', 8).notNullable().defaultTo('explicit');
    // open | cancelled | fulfilled; "expired" is open with expires_at in the past, decided on read.
    table.string('status', 10).notNullable().defaultTo('open');
    table.timestamp('expires_at', { useTz: true }).nullable();
    table.uuid('transaction_id').nullable().references('transactions.id');
    // An auto-accept attempt in progress holds the demand (compare-and-set); a crash leaves a stale hold.
    table.timestamp('auto_accept_claimed_at', { useTz: true }).nullable();
    table.integer('auto_accept_attempts').notNullable().defaultTo(0);
    table.timestamp('cancelled_at', { useTz: true }).nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
    table.index(['owner_user_id', 'owner_type', 'created_at', 'id'], 'demands_owner_created');
  });
  await knex.raw(`ALTER TABLE demands
    ADD CONSTRAINT demands_status_valid CHECK (status IN ('open', 'cancelled', 'fulfilled')),
    ADD CONSTRAINT demands_type_valid CHECK (demand_type IN ('explicit', 'implicit')),
    ADD CONSTRAINT demands_max_price_not_negative CHECK (max_price IS NULL OR max_price >= 0),
    ADD CONSTRAINT demands_auto_accept_needs_budget CHECK (NOT auto_accept OR max_price IS NOT NULL)`);
  await knex.raw(`ALTER TABLE demands ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, market_search_text(coalesce(title, '') || ' ' || (tags::text))), 'A')
      || setweight(to_tsvector('english'::regconfig, market_search_text(description)), 'B')
    ) STORED`);
  // Discovery reads only open demands: the partial index stays the size of the open market.
  await knex.raw(`CREATE INDEX demands_open_search_vector ON demands USING gin (search_vector) WHERE status = 'open'`);
  await knex.raw(`CREATE INDEX demands_open_auto_accept ON demands (owner_type, max_price) WHERE status = 'open' AND auto_accept`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('demands');
  await knex.raw('DROP INDEX IF EXISTS capabilities_search_vector');
  await knex.raw('ALTER TABLE capabilities DROP COLUMN IF EXISTS search_vector');
  await knex.raw('DROP FUNCTION IF EXISTS market_search_text(text)');
}
