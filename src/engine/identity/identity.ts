import { randomUUID } from 'node:crypto';
import { apiKeyMatches, generateApiKey, parseApiKeyPrefix } from '../../auth/api-keys.ts';
import { hashPassword, verifyPassword } from '../../auth/passwords.ts';
import { AppError, notFound, unauthenticated } from '../../errors.ts';
import type { CreateApiKeyInput, LoginInput, SignupInput } from '../../schemas/identity.ts';
import { ensureUserAccounts } from '../../store/accounts.ts';
import * as store from '../../store/identity.ts';
import type { Admission } from './admission.ts';
import { type EngineDependencies, type Principal, SharedLoads, TtlCache } from '../common/index.ts';
import { noteKeyUse } from './key-usage.ts';
import { uuidPattern } from '../../domain/ids.ts';
import { limits } from '../../limits.ts';
import { createKeyRevocations } from './key-revocations.ts';

/** Raw credential headers, as the transport found them. */
export interface Credentials {
  apiKey?: string;
  platformUserId?: string;
  authorization?: string;
}

export function createIdentityEngine(dependencies: EngineDependencies, admission: Admission) {
  const { db, jwt } = dependencies;
  // Only positive answers are cached: a new key, link or user works at once, and a failed
  // lookup is never remembered.
  const keysByPrefix = new TtlCache<store.ApiKeyRow>(limits.credentialCacheTtlMs, limits.credentialCacheEntriesMax);
  const knownLinks = new TtlCache<true>(limits.credentialCacheTtlMs, limits.credentialCacheEntriesMax);
  const knownUsers = new TtlCache<true>(limits.credentialCacheTtlMs, limits.credentialCacheEntriesMax);
  // Misses of the same key, link or user that overlap share one lookup (common/shared-loads.ts):
  // thousands of streams reconnecting with a few credentials cost a few queries.
  const keyLookups = new SharedLoads<store.ApiKeyRow | undefined>((key) => key !== undefined);
  const linkLookups = new SharedLoads<boolean>((linked) => linked);
  const userLookups = new SharedLoads<boolean>((exists) => exists);
  const revocations = createKeyRevocations(dependencies, admission, {
    forget: (prefix) => {
      keysByPrefix.delete(prefix);
      keyLookups.forget(prefix);
    },
    forgetAll: () => {
      keysByPrefix.clear();
      keyLookups.forgetAll();
    },
  });

  async function findKey(prefix: string) {
    const cached = keysByPrefix.get(prefix);
    if (cached) return cached;
    // A lookup that started before a revocation was heard and ends after it may have read the key
    // before it was revoked, so its answer is not cached, nor shared with a caller who came after.
    const heardBefore = revocations.heard;
    const key = await keyLookups.load(prefix, heardBefore, () => store.findApiKeyByPrefix(db, prefix));
    if (key && heardBefore === revocations.heard) keysByPrefix.set(prefix, key);
    return key;
  }

  async function isLinkedCached(apiKeyId: string, userId: string) {
    const cacheKey = `${apiKeyId}:${userId}`;
    if (knownLinks.get(cacheKey)) return true;
    const linked = await linkLookups.load(cacheKey, 0, () => store.isLinked(db, apiKeyId, userId));
    if (linked) knownLinks.set(cacheKey, true);
    return linked;
  }

  async function userExists(userId: string) {
    if (knownUsers.get(userId)) return true;
    const exists = await userLookups.load(userId, 0, async () => (await store.findUserById(db, userId)) !== undefined);
    if (exists) knownUsers.set(userId, true);
    return exists;
  }

  /**
   * Resolves credentials to a principal; a request from `address` that fails (4010) counts
   * against the address's authentication failures, and once those are spent the address's
   * credentials are refused (4290) before any lookup. Mixing both kinds is refused outright (4011) rather than
   * guessing which one the caller meant, because the kind decides currency and space.
   */
  async function authenticate(credentials: Credentials, address?: string): Promise<Principal> {
    const presented = credentials.apiKey !== undefined || credentials.platformUserId !== undefined || credentials.authorization !== undefined;
    // Without an address (a socket checking its own credentials again) nothing is counted.
    if (address === undefined || !presented) return resolve(credentials);
    admission.authenticationFailures.refuseIfBlocked(address);
    try {
      return await resolve(credentials);
    } catch (error) {
      if (error instanceof AppError && error.errorName === 'unauthenticated') await admission.authenticationFailures.recordFailure(address);
      throw error;
    }
  }

  async function resolve(credentials: Credentials): Promise<Principal> {
    const hasKey = credentials.apiKey !== undefined || credentials.platformUserId !== undefined;
    const hasBearer = credentials.authorization !== undefined;
    if (hasKey && hasBearer) throw new AppError('mixed_credentials', 'send either API key headers or a bearer token, not both');
    if (hasBearer) return authenticateBearer(credentials.authorization!);
    if (hasKey) return authenticateApiKey(credentials.apiKey, credentials.platformUserId);
    throw unauthenticated('credentials required');
  }

  async function authenticateBearer(header: string): Promise<Principal> {
    // The scheme's name is case-insensitive (RFC 9110 section 11.1): some clients send `bearer`.
    const match = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*)$/i.exec(header.trim());
    const verified = match ? jwt.verify(match[1]!) : null;
    if (!verified || !uuidPattern.test(verified.subject)) throw unauthenticated('invalid or expired bearer token');
    const id = verified.subject.toLowerCase();
    if (!(await userExists(id))) throw unauthenticated('invalid or expired bearer token');
    return { user_id: id, caller_type: 'human', platform: null, api_key_id: null, expires_at_ms: verified.expiresAtMs };
  }

  async function authenticateApiKey(apiKey: string | undefined, platformUserId: string | undefined): Promise<Principal> {
    if (!apiKey || !platformUserId) throw unauthenticated('X-Api-Key and X-Platform-User-Id are both required');
    const heardBefore = revocations.heard;
    const prefix = parseApiKeyPrefix(apiKey);
    const key = prefix ? await findKey(prefix) : undefined;
    if (!key || !apiKeyMatches(apiKey, key.key_hash)) throw unauthenticated('unknown API key');
    if (!uuidPattern.test(platformUserId)) throw unauthenticated('X-Platform-User-Id must be a user id (UUID)');
    const userId = platformUserId.toLowerCase();
    if (!(await isLinkedCached(key.id, userId))) {
      if (!key.auto_provision) throw unauthenticated('this API key may not act for that user');
      await provisionLinkedUser(key.id, userId);
    }
    const principal: Principal = {
      user_id: userId,
      caller_type: 'agent',
      platform: key.agent_platform_type,
      api_key_id: key.id,
      // A person's own key may carry their budget; the operator's keys have no owner to set one.
      budget_key_id: key.owner_user_id === null ? null : key.id,
    };
    revocations.noteAuthenticated(principal, heardBefore);
    noteKeyUse(dependencies, key.id);
    return principal;
  }

  /**
   * A trusted auto-provisioning platform may bring its own new user ids; each is created once and
   * linked. It may never take over a user that already exists (a human account, or another
   * platform's user): that still needs an explicit link.
   */
  async function provisionLinkedUser(apiKeyId: string, userId: string) {
    await db.transaction(async (trx) => {
      const created = await trx('users').insert({ id: userId }).onConflict('id').ignore().returning('id');
      // A concurrent first request of the same platform may have just created and linked it.
      if (created.length === 0 && !(await store.isLinked(trx, apiKeyId, userId))) {
        throw unauthenticated('this API key may not act for that user');
      }
      if (created.length === 0) return;
      await ensureUserAccounts(trx, [userId]);
      await store.insertLink(trx, apiKeyId, userId);
    });
  }

  /** Every user gets both wallet accounts at birth, so money code never has to create them. */
  async function insertUserWithAccounts(row: { id: string; email: string | null; password_hash: string | null; display_name: string | null }) {
    await db.transaction(async (trx) => {
      const inserted = await trx('users').insert(row).onConflict('email').ignore().returning('id');
      if (inserted.length === 0) throw new AppError('conflict', 'an account with this email already exists');
      await ensureUserAccounts(trx, [row.id]);
    });
  }

  async function signup(input: SignupInput) {
    const id = randomUUID();
    const passwordHash = await hashPassword(input.password);
    await insertUserWithAccounts({ id, email: input.email, password_hash: passwordHash, display_name: input.display_name ?? null });
    return issueToken(id);
  }

  /** Under the login failure buckets: only a wrong password counts (admission.underLoginLimits). */
  function login(input: LoginInput, address: string) {
    return admission.underLoginLimits({ address, principal: null, account: input.email }, () => checkPassword(input));
  }

  async function checkPassword(input: LoginInput) {
    const user = await store.findUserByEmail(db, input.email);
    // verifyPassword runs even for an unknown email so both failures take the same time.
    const valid = await verifyPassword(input.password, user?.password_hash);
    if (!user || !valid) throw unauthenticated('wrong email or password');
    return issueToken(user.id);
  }

  function issueToken(userId: string) {
    const { token, expiresInSeconds } = jwt.sign(userId);
    return { user_id: userId, access_token: token, token_type: 'Bearer' as const, expires_in: expiresInSeconds };
  }

  function me(principal: Principal) {
    return { user_id: principal.user_id, caller_type: principal.caller_type, agent_platform_type: principal.platform };
  }

  async function createUser(input: { email?: string; password?: string; display_name?: string }) {
    const id = randomUUID();
    const passwordHash = input.password ? await hashPassword(input.password) : null;
    await insertUserWithAccounts({ id, email: input.email?.toLowerCase() ?? null, password_hash: passwordHash, display_name: input.display_name ?? null });
    return { user_id: id, email: input.email?.toLowerCase() ?? null };
  }

  async function createApiKey(input: CreateApiKeyInput) {
    const generated = generateApiKey();
    const [row] = await store.insertApiKey(db, {
      id: randomUUID(),
      agent_platform_type: input.agent_platform_type,
      name: input.name ?? null,
      key_prefix: generated.prefix,
      key_hash: generated.hash,
      auto_provision: input.auto_provision ?? false,
    });
    return {
      id: row!.id,
      api_key: generated.key,
      key_prefix: row!.key_prefix,
      agent_platform_type: row!.agent_platform_type,
      name: row!.name,
      auto_provision: row!.auto_provision,
      created_at: new Date(row!.created_at).toISOString(),
    };
  }

  async function linkUser(apiKeyId: string, userId: string) {
    if (!(await store.findApiKeyById(db, apiKeyId))) throw notFound('API key');
    if (!(await store.findUserById(db, userId))) throw notFound('user');
    await store.insertLink(db, apiKeyId, userId);
    return { api_key_id: apiKeyId, user_id: userId };
  }

  async function mintToken(userId: string, lifetimeSeconds?: number) {
    if (!(await store.findUserById(db, userId))) throw notFound('user');
    const { token, expiresInSeconds } = jwt.sign(userId, lifetimeSeconds);
    return { user_id: userId, access_token: token, token_type: 'Bearer' as const, expires_in: expiresInSeconds };
  }

  return {
    authenticate,
    signup,
    login,
    me,
    createUser,
    createApiKey,
    linkUser,
    mintToken,
    listenForRevocations: revocations.listen,
    announceRevocation: revocations.announce,
    refuseIfRevokedSince: revocations.refuseIfRevokedSince,
  };
}

export type IdentityEngine = ReturnType<typeof createIdentityEngine>;
