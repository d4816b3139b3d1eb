import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { generateApiKey } from '../../auth/api-keys.ts';
import { agentPlatformNames, type AgentPlatformType } from '../../domain/device-codes.ts';
import { notFound } from '../../errors.ts';
import { limits } from '../../limits.ts';
import type { ApiKeyView } from '../../schemas/device-authorization.ts';
import * as store from '../../store/identity.ts';
import { capReached, lockAccount, type EngineDependencies, type Principal } from '../common/index.ts';
import type { IdentityEngine } from './identity.ts';

/**
 * A person's own API keys: the ones their device approvals issued (docs/decisions/identity-and-access.md
 * "Device authorization: the issued key and its revocation"). They list them and revoke them; a revoked key stops working at once on every
 * instance, because the revocation is announced on the bus and each instance forgets the key it
 * had cached and ends the streams open with it (engine/identity/key-revocations.ts).
 */
const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());

export const apiKeyView = (row: store.ApiKeyRow): ApiKeyView => ({
  id: row.id,
  key_prefix: row.key_prefix,
  agent_platform_type: row.agent_platform_type,
  name: row.name,
  origin: row.origin as ApiKeyView['origin'],
  created_at: iso(row.created_at)!,
  last_used_at: iso(row.last_used_at),
  revoked_at: iso(row.revoked_at),
});

/**
 * Issues a key owned by the approving person and linked to them only: it acts for that one user,
 * never for another, and never creates users. Runs inside the redemption's transaction.
 */
export async function issueOwnedKey(trx: Knex, ownerUserId: string, platform: AgentPlatformType) {
  const generated = generateApiKey();
  const [row] = await store.insertApiKey(trx, {
    id: randomUUID(),
    agent_platform_type: platform,
    name: agentPlatformNames[platform],
    key_prefix: generated.prefix,
    key_hash: generated.hash,
    auto_provision: false,
    owner_user_id: ownerUserId,
    origin: 'device',
  });
  await store.insertLink(trx, row!.id, ownerUserId);
  return { id: row!.id, api_key: generated.key };
}

export function createApiKeyEngine({ db, log, now }: EngineDependencies, identity: IdentityEngine) {
  async function list(principal: Principal, page: number, pageSize: number) {
    const { rows, total } = await store.listOwnedApiKeys(db, principal.user_id, (page - 1) * pageSize, pageSize);
    return { items: rows.map(apiKeyView), total, page, page_size: pageSize, has_more: page * pageSize < total, next_cursor: null };
  }

  async function revoke(principal: Principal, id: string) {
    const row = await store.revokeOwnedApiKey(db, principal.user_id, id, now());
    if (!row) throw notFound('API key');
    // A repeated revoke announces again only while an instance may still have the key cached, so
    // that a retry can repair a lost announcement; later there is nothing left to repair (open
    // streams are ended by each instance's periodic check), and announcing would only make every
    // instance forget its cached keys again, as often as someone repeats the DELETE.
    if (now().getTime() - new Date(row.revoked_at!).getTime() >= limits.credentialCacheTtlMs) return apiKeyView(row);
    try {
      await identity.announceRevocation({ key_prefix: row.key_prefix, api_key_id: row.id });
    } catch (error) {
      // Committed already: other instances stop accepting the key when their cache entry ends.
      log.error('API key revoked, but the revocation could not be announced on the bus', { error, api_key_id: row.id });
    }
    return apiKeyView(row);
  }

  /**
   * A key the person makes by hand on the console (issue 31): owned by them and linked to them
   * only, like a device sign-in's; its secret is answered once, here, and never again. At most
   * ownApiKeysPerUserMax live keys per person, counted under the account's lock.
   */
  async function create(principal: Principal, name: string) {
    return db.transaction(async (trx) => {
      await lockAccount(trx, principal.user_id);
      if ((await store.countLiveOwnedApiKeys(trx, principal.user_id)) >= limits.ownApiKeysPerUserMax) {
        throw capReached(`at most ${limits.ownApiKeysPerUserMax} live API keys per person; revoke one first`, { api_keys_max: limits.ownApiKeysPerUserMax });
      }
      const generated = generateApiKey();
      const [row] = await store.insertApiKey(trx, {
        id: randomUUID(),
        agent_platform_type: 'custom_mcp',
        name,
        key_prefix: generated.prefix,
        key_hash: generated.hash,
        auto_provision: false,
        owner_user_id: principal.user_id,
        origin: 'console',
      });
      await store.insertLink(trx, row!.id, principal.user_id);
      return { key: apiKeyView(row!), api_key: generated.key, user_id: principal.user_id };
    });
  }

  return { list, revoke, create };
}

export type ApiKeyEngine = ReturnType<typeof createApiKeyEngine>;
