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
  /** The person who approved the device request that issued the key; null for the operator's keys. */
  owner_user_id: string | null;
  /** How the key came to be: device, mcp or console (migration 050); null for the operator's keys. */
  origin: string | null;
  last_used_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

export const findUserById = (db: Knex, id: string) => db<UserRow>('users').where({ id }).first();
export const findUserByEmail = (db: Knex, email: string) => db<UserRow>('users').where({ email }).first();

export const findApiKeyByPrefix = (db: Knex, prefix: string) => db<ApiKeyRow>('api_keys').where({ key_prefix: prefix }).whereNull('revoked_at').first();
export const findApiKeyById = (db: Knex, id: string) => db<ApiKeyRow>('api_keys').where({ id }).first();
/**
 * Which of these keys are revoked. The ids are those of the keys with streams or sockets open on
 * one instance: at most sseStreamsPerInstanceMax + webSocketsPerInstanceMax (40,000), within the
 * 65,535 parameters of one statement.
 */
export const findRevokedApiKeys = (db: Knex, ids: string[]) =>
  db<ApiKeyRow>('api_keys').whereIn('id', ids).whereNotNull('revoked_at').select('id', 'key_prefix');
export const insertApiKey = (
  db: Knex,
  row: Omit<ApiKeyRow, 'created_at' | 'revoked_at' | 'owner_user_id' | 'origin' | 'last_used_at'> & { owner_user_id?: string; origin?: string },
) => db('api_keys').insert(row).returning('*') as Promise<ApiKeyRow[]>;

export async function isLinked(db: Knex, apiKeyId: string, userId: string): Promise<boolean> {
  const row = await db('api_key_links').where({ api_key_id: apiKeyId, user_id: userId }).first('user_id');
  return row !== undefined;
}

/** Inserting an existing link is not an error: linking is idempotent by nature. */
export const insertLink = (db: Knex, apiKeyId: string, userId: string) =>
  db('api_key_links').insert({ api_key_id: apiKeyId, user_id: userId }).onConflict(['api_key_id', 'user_id']).ignore();

/** The person's live (not revoked) keys, counted for ownApiKeysPerUserMax. */
export async function countLiveOwnedApiKeys(db: Knex, ownerUserId: string): Promise<number> {
  const [row] = await db('api_keys').where({ owner_user_id: ownerUserId }).whereNull('revoked_at').count<{ count: string | number }[]>({ count: '*' });
  return Number(row?.count ?? 0);
}

/** Notes a use of the key, unless one at or after `since` is noted already (one write a minute at most). */
export const touchApiKey = (db: Knex, id: string, at: Date, since: Date) =>
  db('api_keys')
    .where({ id })
    .where((query) => {
      void query.whereNull('last_used_at').orWhere('last_used_at', '<', since);
    })
    .update({ last_used_at: at });

/** A person's own keys (issued by their device approvals), newest first, one page of them. */
export async function listOwnedApiKeys(db: Knex, ownerUserId: string, offset: number, limit: number) {
  const [rows, counted] = await Promise.all([
    db<ApiKeyRow>('api_keys')
      .where({ owner_user_id: ownerUserId })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit),
    db('api_keys').where({ owner_user_id: ownerUserId }).count<{ count: string | number }[]>({ count: '*' }),
  ]);
  return { rows, total: Number(counted[0]?.count ?? 0) };
}

/**
 * Revokes one of the owner's keys. A key of someone else (or of the operator) is not found, the
 * same as a key that does not exist. Revoking again changes nothing and answers the key as it is.
 */
export async function revokeOwnedApiKey(db: Knex, ownerUserId: string, id: string, now: Date): Promise<ApiKeyRow | undefined> {
  const [revoked] = await db<ApiKeyRow>('api_keys')
    .where({ id, owner_user_id: ownerUserId })
    .whereNull('revoked_at')
    .update({ revoked_at: now })
    .returning('*');
  return revoked ?? db<ApiKeyRow>('api_keys').where({ id, owner_user_id: ownerUserId }).first();
}
