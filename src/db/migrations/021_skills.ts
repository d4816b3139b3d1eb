import type { Knex } from 'knex';

/**
 * Skills, their candidates and their ratings (issue 17, docs/skills.md). A skill lives in the
 * space of its owner's caller type like a capability. Its words get the same stored term vector
 * and generated search column as capabilities (docs/matching.md), so the hall's text query is
 * found through an index and ranked by the matcher without analysing any row's text again.
 *
 * The hall sorts by newest, price or quality: each order has a partial index over the active,
 * undeleted skills of one space, so a page costs the same at 10 skills or 10,000. `quality_score`
 * is the Bayesian average of the ratings (domain/skills.ts), written with every rating in the
 * same transaction, so sorting by it reads a column instead of aggregating ratings per request.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('skills', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.text('name').notNullable();
    table.text('description').notNullable();
    table.string('mode', 8).notNullable();
    table.text('city').nullable();
    table.string('category', 50).notNullable();
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.jsonb('images').notNullable().defaultTo('[]');
    table.bigInteger('price').nullable();
    table.string('pricing_model', 16).notNullable();
    table.integer('min_duration').nullable();
    table.integer('max_duration').nullable();
    table.string('status', 8).notNullable();
    table.string('source', 12).notNullable();
    table.uuid('candidate_id').nullable().unique();
    table.jsonb('term_vector').notNullable();
    table.text('words_sha').notNullable();
    table.integer('rating_count').notNullable().defaultTo(0);
    table.integer('rating_sum').notNullable().defaultTo(0);
    table.decimal('quality_score', 6, 3).notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
    table.timestamp('deleted_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE skills
    ADD CONSTRAINT skills_owner_type CHECK (owner_type IN ('agent', 'human')),
    ADD CONSTRAINT skills_mode CHECK (mode IN ('online', 'offline')),
    ADD CONSTRAINT skills_offline_city CHECK (mode = 'online' OR city IS NOT NULL),
    ADD CONSTRAINT skills_status CHECK (status IN ('active', 'inactive')),
    ADD CONSTRAINT skills_source CHECK (source IN ('manual', 'extracted', 'ai_created')),
    ADD CONSTRAINT skills_price_not_negative CHECK (price IS NULL OR price >= 0),
    ADD CONSTRAINT skills_durations CHECK (min_duration IS NULL OR max_duration IS NULL OR min_duration <= max_duration),
    ADD CONSTRAINT skills_ratings CHECK (rating_count >= 0 AND rating_sum >= rating_count AND rating_sum <= 5 * rating_count)`);
  await knex.raw(`ALTER TABLE skills ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, market_search_text(name || ' ' || (tags::text))), 'A')
      || setweight(to_tsvector('english'::regconfig, market_search_text(description)), 'B')
    ) STORED`);
  await knex.raw('CREATE INDEX skills_search_vector ON skills USING gin (search_vector)');
  const hall = `WHERE status = 'active' AND deleted_at IS NULL`;
  await knex.raw(`CREATE INDEX skills_hall_newest ON skills (owner_type, created_at DESC, id DESC) ${hall}`);
  await knex.raw(`CREATE INDEX skills_hall_price_asc ON skills (owner_type, price ASC NULLS LAST, id ASC) ${hall}`);
  await knex.raw(`CREATE INDEX skills_hall_price_desc ON skills (owner_type, price DESC NULLS LAST, id DESC) ${hall}`);
  await knex.raw(`CREATE INDEX skills_hall_quality ON skills (owner_type, quality_score DESC, id DESC) ${hall}`);
  await knex.raw('CREATE INDEX skills_owner_newest ON skills (owner_user_id, created_at DESC, id DESC) WHERE deleted_at IS NULL');

  await knex.schema.createTable('skill_candidates', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.text('name').notNullable();
    table.text('description').notNullable();
    table.string('category', 50).notNullable();
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.jsonb('evidence').notNullable();
    table.decimal('confidence', 4, 3).notNullable();
    table.string('extracted_by', 8).notNullable();
    table.string('status', 10).notNullable();
    table.uuid('skill_id').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('confirmed_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE skill_candidates
    ADD CONSTRAINT skill_candidates_status CHECK (status IN ('pending', 'confirmed')),
    ADD CONSTRAINT skill_candidates_confirmed CHECK ((status = 'confirmed') = (skill_id IS NOT NULL))`);
  await knex.raw('CREATE INDEX skill_candidates_owner_newest ON skill_candidates (owner_user_id, created_at DESC, id DESC)');

  await knex.schema.createTable('skill_ratings', (table) => {
    table.uuid('id').primary();
    table.uuid('skill_id').notNullable().references('skills.id');
    table.uuid('rater_user_id').notNullable().references('users.id');
    table.uuid('task_id').nullable();
    table.smallint('score').notNullable();
    table.text('comment').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE skill_ratings ADD CONSTRAINT skill_ratings_score CHECK (score BETWEEN 1 AND 5)`);
  // One rating per rater and task: a retried rating cannot count twice.
  await knex.raw('CREATE UNIQUE INDEX skill_ratings_once ON skill_ratings (skill_id, rater_user_id, task_id) NULLS NOT DISTINCT');
  await knex.raw('CREATE INDEX skill_ratings_newest ON skill_ratings (skill_id, created_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('skill_ratings');
  await knex.schema.dropTableIfExists('skill_candidates');
  await knex.schema.dropTableIfExists('skills');
}
