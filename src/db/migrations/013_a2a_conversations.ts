import type { Knex } from 'knex';

/**
 * The A2A gateway's own memory (docs/decisions/a2a.md, "Conversations"):
 *
 * - `a2a_tasks`: one row per A2A task that needs more than its transaction. A conversation task
 *   (`kind = 'conversation'`: a text-only message became a demand) lives only here until a pick
 *   buys; then `transaction_id` names the purchase. A purchase task (`kind = 'purchase'`, `id` =
 *   the transaction id) gets a row when it was bought over A2A or received an A2A message, to
 *   keep the context id exactly as the client sent it. `client_task_id` is a v0.1 client's own id
 *   for a conversation (purchase tasks keep theirs on the transaction, as before).
 * - `a2a_messages`: the messages of a task in arrival order: every buyer message and the agent
 *   messages of a conversation's choosing phase. The states a transaction went through are not
 *   copied here: they are derived from the transaction's own timestamps, which live as long as
 *   the transaction, so history survives the outbox's retention without costing the hot path of
 *   a state change anything. `(task_id, role, message_id)` is unique, so a retried message is
 *   stored once.
 *
 * Parts and candidates are `json`, not `jsonb`: they are shown back as they were written, members
 * in their order, and never searched.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('a2a_tasks', (table) => {
    table.uuid('id').primary();
    table.string('kind', 12).notNullable();
    table.uuid('owner_user_id').notNullable().references('users.id');
    table.string('owner_type', 5).notNullable();
    table.uuid('context_id').notNullable();
    table.text('client_context_id').nullable();
    table.text('client_task_id').nullable();
    table.uuid('demand_id').nullable().references('demands.id');
    table.uuid('transaction_id').nullable().references('transactions.id').unique();
    // choosing | bought | cancelled for conversations; null for purchase tasks.
    table.string('status', 10).nullable();
    table.json('candidates').nullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('updated_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE a2a_tasks
    ADD CONSTRAINT a2a_tasks_kind_valid CHECK (kind IN ('conversation', 'purchase')),
    ADD CONSTRAINT a2a_tasks_status_valid CHECK (
      (kind = 'purchase' AND status IS NULL) OR (kind = 'conversation' AND status IN ('choosing', 'bought', 'cancelled')))`);
  // A v0.1 client names its conversation by its own id, among its own tasks only.
  await knex.raw('CREATE UNIQUE INDEX a2a_tasks_client_task_id ON a2a_tasks (owner_user_id, client_task_id) WHERE client_task_id IS NOT NULL');
  await knex.schema.createTable('a2a_messages', (table) => {
    table.bigIncrements('sequence').primary();
    table.uuid('task_id').notNullable().references('a2a_tasks.id');
    table.text('message_id').notNullable();
    table.string('role', 5).notNullable();
    table.json('parts').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.unique(['task_id', 'role', 'message_id']);
    table.index(['task_id', 'created_at', 'sequence']);
  });
  await knex.raw(`ALTER TABLE a2a_messages ADD CONSTRAINT a2a_messages_role_valid CHECK (role IN ('user', 'agent'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('a2a_messages');
  await knex.schema.dropTableIfExists('a2a_tasks');
}
