import type { Knex } from 'knex';

/** Identity queries as plain functions of a knex handle (the database or a transaction). */
export interface UserRow {
  id: string;
  email: string | null;
  password_hash: string | null;
  display_name: string | null;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  agent_platform_type: string;
  name: string | null;
  key_prefix: string;
  key_hash: string;
  auto_provision: boolean;
  created_at: Date;
  revoked_at: Date | null;
}

export const findUserById = (db: Knex, id: string) => db<UserRow>('users').where({ id }).first();
export const findUserByEmail = (db: Knex, email: string) => db<UserRow>('users').where({ email }).first();

export const findApiKeyByPrefix = (db: Knex, prefix: string) =>
  db<ApiKeyRow>('api_keys').where({ key_prefix: prefix }).whereNull('revoked_at').first();
export const findApiKeyById = (db: Knex, id: string) => db<ApiKeyRow>('api_keys').where({ id }).first();
export const insertApiKey = (db: Knex, row: Omit<ApiKeyRow, 'created_at' | 'revoked_at'>) =>
  db('api_keys').insert(row).returning('*') as Promise<ApiKeyRow[]>;

export async function isLinked(db: Knex, apiKeyId: string, userId: string): Promise<boolean> {
  const row = await db('api_key_links').where({ api_key_id: apiKeyId, user_id: userId }).first('user_id');
  return row !== undefined;
}

/** Inserting an existing link is not an error: linking is idempotent by nature. */
export const insertLink = (db: Knex, apiKeyId: string, userId: string) =>
  db('api_key_links').insert({ api_key_id: apiKeyId, user_id: userId }).onConflict(['api_key_id', 'user_id']).ignore();
