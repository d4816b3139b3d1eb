import type { Knex } from 'knex';

/**
 * Tasks (issue 18, docs/tasks.md): work published in one space, with an optional bounty held
 * (frozen) from the publisher's account while the task is open. `bounty_held` is what is frozen
 * for the task right now (0 for a draft, a closed or an expired task): the books check that every
 * user's frozen balance is the sum of its open transactions' prices and its tasks' bounty_held.
 *
 * The words get the stored term vector and the generated search column of capabilities and
 * skills (docs/matching.md); each hall order has a partial index over the open tasks of one space.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tasks', (table) => {
    table.uuid('id').primary();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.text('title').notNullable();
    table.text('description').notNullable();
    table.string('mode', 8).notNullable();
    table.text('city').nullable();
    table.string('category', 50).nullable();
    table.jsonb('tags').notNullable().defaultTo('[]');
    table.jsonb('image_urls').notNullable().defaultTo('[]');
    table.jsonb('contact_info').nullable();
    table.bigInteger('bounty_amount').nullable();
    table.string('bounty_currency', 3).notNullable();
    table.bigInteger('bounty_held').notNullable().defaultTo(0);
    table.integer('delivery_hours').nullable();
    table.string('preferred_billing_model', 16).nullable();
    table.integer('estimated_quantity').nullable();
    table.string('status', 10).notNullable();
    table.uuid('matched_skill_id').nullable();
    table.uuid('reused_from').nullable();
    table.jsonb('term_vector').notNullable();
    table.text('words_sha').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
    table.timestamp('published_at', { useTz: true }).nullable();
    table.timestamp('expires_at', { useTz: true }).nullable();
    table.timestamp('ended_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE tasks
    ADD CONSTRAINT tasks_owner_type CHECK (owner_type IN ('agent', 'human')),
    ADD CONSTRAINT tasks_mode CHECK (mode IN ('online', 'offline')),
    ADD CONSTRAINT tasks_offline_city CHECK (mode = 'online' OR city IS NOT NULL),
    ADD CONSTRAINT tasks_status CHECK (status IN ('draft', 'open', 'matched', 'closed', 'cancelled', 'expired')),
    ADD CONSTRAINT tasks_currency CHECK (bounty_currency IN ('UT', 'CNY')),
    ADD CONSTRAINT tasks_bounty_not_negative CHECK (bounty_amount IS NULL OR bounty_amount >= 0),
    ADD CONSTRAINT tasks_held_not_negative CHECK (bounty_held >= 0),
    ADD CONSTRAINT tasks_held_only_while_open CHECK (status = 'open' OR bounty_held = 0),
    ADD CONSTRAINT tasks_open_is_published CHECK (status = 'draft' OR published_at IS NOT NULL)`);
  await knex.raw(`ALTER TABLE tasks ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
      setweight(to_tsvector('english'::regconfig, market_search_text(title || ' ' || (tags::text))), 'A')
      || setweight(to_tsvector('english'::regconfig, market_search_text(description)), 'B')
    ) STORED`);
  await knex.raw(`CREATE INDEX tasks_open_search_vector ON tasks USING gin (search_vector) WHERE status = 'open'`);
  const open = `WHERE status = 'open'`;
  await knex.raw(`CREATE INDEX tasks_hall_newest ON tasks (owner_type, published_at DESC, id DESC) ${open}`);
  await knex.raw(`CREATE INDEX tasks_hall_bounty_desc ON tasks (owner_type, bounty_amount DESC NULLS LAST, id DESC) ${open}`);
  await knex.raw(`CREATE INDEX tasks_hall_bounty_asc ON tasks (owner_type, bounty_amount ASC NULLS LAST, id ASC) ${open}`);
  await knex.raw(`CREATE INDEX tasks_hall_deadline ON tasks (owner_type, expires_at ASC, id ASC) ${open}`);
  await knex.raw('CREATE INDEX tasks_owner_newest ON tasks (owner_user_id, created_at DESC, id DESC)');
  // The expiry job's scan: open tasks by their deadline, in every space.
  await knex.raw(`CREATE INDEX tasks_open_expiry ON tasks (expires_at) ${open}`);
  await createApplications(knex);
}

/**
 * Applications: a skill's owner offers it for a task. One live application (pending or accepted)
 * per skill per task, by a partial unique index, so parallel applies of one skill make one.
 */
async function createApplications(knex: Knex) {
  await knex.schema.createTable('task_applications', (table) => {
    table.uuid('id').primary();
    table.uuid('task_id').notNullable().references('tasks.id');
    table.uuid('skill_id').notNullable().references('skills.id');
    table.uuid('applicant_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.text('message').nullable();
    table.bigInteger('proposed_price').nullable();
    table.string('proposed_billing_model', 16).nullable();
    table.bigInteger('proposed_unit_price').nullable();
    table.integer('proposed_quantity').nullable();
    table.string('status', 10).notNullable();
    table.timestamp('applied_at', { useTz: true }).notNullable();
    table.timestamp('decided_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE task_applications
    ADD CONSTRAINT task_applications_status CHECK (status IN ('pending', 'withdrawn', 'rejected', 'accepted')),
    ADD CONSTRAINT task_applications_prices CHECK ((proposed_price IS NULL OR proposed_price >= 0) AND (proposed_unit_price IS NULL OR proposed_unit_price >= 0))`);
  await knex.raw(`CREATE UNIQUE INDEX task_applications_live ON task_applications (task_id, skill_id) WHERE status IN ('pending', 'accepted')`);
  await knex.raw('CREATE INDEX task_applications_task ON task_applications (task_id, applied_at DESC, id DESC)');
  await knex.raw('CREATE INDEX task_applications_applicant ON task_applications (applicant_id, applied_at DESC, id DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('task_applications');
  await knex.schema.dropTableIfExists('tasks');
}
