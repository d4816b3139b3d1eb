import type { Knex } from 'knex';

/**
 * MCP sign-in (issue 20, docs/mcp.md "Signing in"): this server is the OAuth 2.1 authorization
 * server of its own MCP endpoint. Clients (registered dynamically, or known by their client
 * metadata document's URL), the sign-in requests waiting for a person's decision, the codes a
 * decision gives, and the tokens a code or a refresh gives. Every code and token is kept as a
 * SHA-256 hash only. An approved grant is an API key of the person (api_keys, listed and revoked
 * beside device-flow keys); its tokens name that key, so revoking the key ends them all.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_clients', (table) => {
    table.text('client_id').primary();
    /** `registered` (RFC 7591) or `metadata_document` (its id is the document's https URL; the row is a cache). */
    table.string('source', 20).notNullable();
    table.jsonb('metadata').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('fetched_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE oauth_clients ADD CONSTRAINT oauth_clients_source CHECK (source IN ('registered', 'metadata_document'))`);

  await knex.schema.createTable('oauth_requests', (table) => {
    table.uuid('id').primary();
    table.text('client_id').notNullable().references('oauth_clients.client_id').onDelete('CASCADE');
    table.text('redirect_uri').notNullable();
    table.text('code_challenge').notNullable();
    table.text('state').nullable();
    table.text('scope').notNullable();
    table.text('resource').notNullable();
    /** pending, then approved (a code was given) or denied. */
    table.string('status', 10).notNullable();
    table.uuid('user_id').nullable().references('users.id');
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
  });
  await knex.raw(`ALTER TABLE oauth_requests ADD CONSTRAINT oauth_requests_status CHECK (status IN ('pending', 'approved', 'denied'))`);
  await knex.raw('CREATE INDEX oauth_requests_expires ON oauth_requests (expires_at)');

  await knex.schema.createTable('oauth_codes', (table) => {
    table.text('code_hash').primary();
    table.uuid('request_id').notNullable().references('oauth_requests.id').onDelete('CASCADE');
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.timestamp('used_at', { useTz: true }).nullable();
  });

  await knex.schema.createTable('oauth_tokens', (table) => {
    table.text('token_hash').primary();
    table.string('kind', 8).notNullable();
    /** A grant's tokens share a family: a refresh token used twice ends the whole family (RFC 9700 4.14.2). */
    table.uuid('family_id').notNullable();
    table.text('client_id').notNullable();
    table.uuid('api_key_id').notNullable().references('api_keys.id');
    table.uuid('user_id').notNullable().references('users.id');
    table.text('scope').notNullable();
    table.text('resource').notNullable();
    table.timestamp('created_at', { useTz: true }).notNullable();
    table.timestamp('expires_at', { useTz: true }).notNullable();
    table.timestamp('used_at', { useTz: true }).nullable();
    table.timestamp('revoked_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE oauth_tokens ADD CONSTRAINT oauth_tokens_kind CHECK (kind IN ('access', 'refresh'))`);
  await knex.raw('CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id)');
  await knex.raw('CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['oauth_tokens', 'oauth_codes', 'oauth_requests', 'oauth_clients']) await knex.schema.dropTableIfExists(table);
}
