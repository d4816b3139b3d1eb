import { isIPv6 } from 'node:net';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type RateLimitName, type RateLimitSetting, rateLimitNames } from '../../config.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { type EngineDependencies, type Principal, TtlCache } from '../common/index.ts';
import { type ReconciledBucket, type Reconciler, createReconciler } from './reconciled-buckets.ts';

/**
 * Admission: whether a request, a stream or a connection may start at all (decisions section 6,
 * docs/decisions/limits-and-storage.md). Rate limits count in Redis, shared by every
 * instance, or in process on the embedded default; open streams and sockets are counted per
 * instance, where their memory is. A refusal is 4290 with `retry_after_seconds`.
 */
export type { RateLimitName };

/**
 * What a bucket is keyed by. An anonymous request's credential is its address; a bucket keyed by
 * API key is skipped for a caller without one (a human).
 */
export const rateLimitKeys: Record<RateLimitName, 'address' | 'credential' | 'apiKey' | 'account' | 'accountAndAddress' | 'userCode'> = {
  requestsPerAddress: 'address',
  signupPerAddress: 'address',
  loginFailuresPerAddress: 'address',
  loginFailuresPerAccountAndAddress: 'accountAndAddress',
  loginFailuresPerAccount: 'account',
  authenticationFailuresPerAddress: 'address',
  oauthRegistrationsPerAddress: 'address',
  oauthSignInRequestsPerAddress: 'address',
  readsPerCredential: 'credential',
  writesPerCredential: 'credential',
  rpcCallsPerCredential: 'credential',
  streamOpensPerCredential: 'credential',
  aiDraftsPerCredential: 'credential',
  readsPerApiKey: 'apiKey',
  writesPerApiKey: 'apiKey',
  rpcCallsPerApiKey: 'apiKey',
  streamOpensPerApiKey: 'apiKey',
  aiDraftsPerApiKey: 'apiKey',
  deviceAuthorizationsPerAddress: 'address',
  userCodeAttemptsPerAddress: 'address',
  userCodeAttemptsPerCode: 'userCode',
  userCodeFailuresPerAccount: 'credential',
};

/** Who is asking, as far as the buckets care. */
export interface Requester {
  address: string;
  principal: Principal | null;
  /** The email a login names, for the per-account buckets. */
  account?: string;
  /** The device user code tried, in its keyed hash (see userCodeHasher), for the per-code bucket. */
  userCode?: string;
}

/** The idempotency scope's notion of a credential: the API key and the user it acts for, or the human. */
export const credentialOf = (principal: Principal) => (principal.api_key_id ? `key:${principal.api_key_id}:${principal.user_id}` : `user:${principal.user_id}`);

/**
 * The address a per-address bucket counts: an IPv6 client usually holds a whole /64, so its
 * addresses share one bucket; IPv4 (and IPv4-mapped IPv6) addresses count as they are.
 */
export function addressKeyOf(address: string): string {
  const bare = address.split('%')[0]!;
  if (!isIPv6(bare) || bare.includes('.')) return address;
  const [head, tail] = bare.split('::') as [string, string | undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = tail === undefined ? headGroups : [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  const numbers = groups.map((group) => parseInt(group, 16));
  // ::ffff:a00:1 is 10.0.0.1 written in hex.
  if (numbers.slice(0, 5).every((number) => number === 0) && numbers[5] === 0xffff) return address;
  return `${numbers
    .slice(0, 4)
    .map((number) => number.toString(16))
    .join(':')}::/64`;
}

function keyFor(name: RateLimitName, requester: Requester): string | null {
  // Only the buckets that need it parse the address: a credential's reads never do.
  const address = () => `address:${addressKeyOf(requester.address)}`;
  switch (rateLimitKeys[name]) {
    case 'account':
      return requester.account === undefined ? address() : `account:${requester.account.toLowerCase()}`;
    case 'accountAndAddress':
      return requester.account === undefined ? address() : `account:${requester.account.toLowerCase()}:${address()}`;
    case 'credential':
      return requester.principal ? credentialOf(requester.principal) : address();
    case 'apiKey':
      return requester.principal?.api_key_id ? `api-key:${requester.principal.api_key_id}` : null;
    case 'userCode':
      return requester.userCode === undefined ? null : `user-code:${requester.userCode}`;
    case 'address':
      return address();
  }
}

export const rateLimited = (retryAfterMs: number, detail: string) =>
  new AppError('rate_limited', detail, { retry_after_seconds: Math.max(1, Math.ceil(retryAfterMs / 1000)), detail });

/** Redis failures are logged at most this often, so an outage is one line a minute, not one per request. */
const outageLogIntervalMs = 60_000;

/**
 * The buckets that protect capacity rather than secrets, whose count across instances may be
 * approximate (docs/decisions/limits-and-storage.md "Reconciled buckets"): taken in this
 * instance's memory with no round trip, and reconciled with Redis in the background. Every
 * other bucket is exact: each token is taken in Redis.
 */
const reconciledNames = [
  'readsPerCredential',
  'readsPerApiKey',
  'rpcCallsPerCredential',
  'rpcCallsPerApiKey',
  'streamOpensPerCredential',
  'streamOpensPerApiKey',
] as const satisfies readonly RateLimitName[];
export const reconciledBucketNames: ReadonlySet<RateLimitName> = new Set<RateLimitName>(reconciledNames);

/**
 * The buckets every token of which is taken in Redis. Only these may be held, given back or
 * cleared one by one (underFailureLimits, giveBack): a reconciled bucket's tokens are in this
 * instance's tally until reconciled, which rate-limiter-flexible's calls would not see.
 */
type ExactBucketName = Exclude<RateLimitName, (typeof reconciledNames)[number]>;

interface Bucket {
  shared: RateLimiterAbstract | null;
  local: RateLimiterMemory;
  /** Set for a reconciled bucket, which takes its tokens here instead. */
  reconciled: ReconciledBucket | null;
}

function createBucket(name: RateLimitName, setting: RateLimitSetting, shared: EngineDependencies['bus']['shared'], reconciler: Reconciler): Bucket {
  const options = { points: setting.requests, duration: setting.windowSeconds, keyPrefix: `${shared?.keyPrefix ?? ''}rate:${name}` };
  return {
    // Not ready (reconnecting) means refused at once and counted locally, instead of queueing.
    shared: shared ? new RateLimiterRedis({ ...options, storeClient: shared.redis, rejectIfRedisNotReady: true }) : null,
    local: new RateLimiterMemory(options),
    // The same Redis key as rate-limiter-flexible's (its prefix, a colon, the key).
    reconciled: reconciledBucketNames.has(name) ? reconciler.bucket(options.keyPrefix, setting.requests, setting.windowSeconds) : null,
  };
}

/** A bucket a request takes from, under the key its requester has there. */
interface Taking<B> {
  name: RateLimitName;
  bucket: B;
  key: string;
}

const loginFailureBuckets = ['loginFailuresPerAddress', 'loginFailuresPerAccountAndAddress', 'loginFailuresPerAccount'] as const;

export function createAdmission({ bus, config, log }: EngineDependencies) {
  let lastOutageLogAt = 0;
  const logOutage = (error: unknown) => {
    if (Date.now() - lastOutageLogAt <= outageLogIntervalMs) return;
    lastOutageLogAt = Date.now();
    log.warn('rate limits are counted per instance: Redis does not answer', { error });
  };
  const reconciler = createReconciler({ redis: bus.shared?.redis ?? null, onFailure: logOutage });
  const buckets = new Map<RateLimitName, Bucket>();
  for (const name of rateLimitNames) {
    const setting = config.rateLimits[name];
    if (setting) buckets.set(name, createBucket(name, setting, bus.shared, reconciler));
  }

  /**
   * With Redis unreachable, each instance keeps counting in its own memory: the limits still hold
   * per instance (so up to N times looser across N instances), and no request fails because of it.
   */
  async function inBucket<T>(bucket: Bucket, operation: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    if (!bucket.shared) return operation(bucket.local);
    try {
      return await operation(bucket.shared);
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) throw outcome;
      logOutage(outcome);
      return operation(bucket.local);
    }
  }

  /** Runs `operation` on each named bucket that is on and applies to the requester. */
  async function eachBucket(
    names: readonly ExactBucketName[],
    requester: Requester,
    operation: (limiter: RateLimiterAbstract, key: string, name: ExactBucketName) => Promise<unknown>,
  ) {
    for (const name of names) {
      // A bucket that is off costs nothing, not even its key (which parses the address).
      const bucket = buckets.get(name);
      if (!bucket) continue;
      const key = keyFor(name, requester);
      if (key !== null) await inBucket(bucket, (limiter) => operation(limiter, key, name));
    }
  }

  /**
   * Takes `points` from every named bucket at once. Reconciled buckets are judged here, with no
   * round trip (unless this instance has admitted all it may alone: then after one
   * reconciliation); the exact ones' Redis commands leave together (one round trip on the
   * auto-pipelined connection) instead of one after another. If any is empty the request is
   * refused with 4290 naming it, and the points the others took are given back, so a refused
   * request costs nothing.
   */
  async function consume(names: readonly RateLimitName[], requester: Requester, points = 1): Promise<void> {
    const reconciled: Taking<ReconciledBucket>[] = [];
    const exact: Taking<Bucket>[] = [];
    for (const name of names) {
      // A bucket that is off costs nothing, not even its key (which may parse the address).
      const bucket = buckets.get(name);
      const key = bucket ? keyFor(name, requester) : null;
      if (key === null) continue;
      if (bucket!.reconciled) reconciled.push({ name, bucket: bucket!.reconciled, key });
      else exact.push({ name, bucket: bucket!, key });
    }
    const waiting = reconciled.filter(({ bucket, key }) => bucket.mustReconcile(key, points));
    if (waiting.length > 0) await Promise.all(waiting.map(({ bucket, key }) => bucket.reconcile(key)));
    takeReconciled(reconciled, points);
    if (exact.length === 0) return;
    try {
      await consumeExact(exact, points);
    } catch (error) {
      for (const { bucket, key } of reconciled) bucket.giveBack(key, points);
      throw error;
    }
  }

  /** Refused (4290) if any of them is empty (which counts the attempt, as an exact bucket does), else a token from each. */
  function takeReconciled(reconciled: Taking<ReconciledBucket>[], points: number) {
    const refusals = reconciled.map(({ bucket, key }) => bucket.refusedForMs(key, points));
    const refusedAt = refusals.findIndex((refusal) => refusal !== null);
    // As in the exact buckets, an empty bucket counts the refused attempt too; the others take nothing.
    for (const [index, { bucket, key }] of reconciled.entries()) if (refusedAt < 0 || refusals[index] !== null) bucket.take(key, points);
    if (refusedAt >= 0) throw rateLimited(refusals[refusedAt]!, `rate limit ${reconciled[refusedAt]!.name} reached`);
  }

  async function consumeExact(applying: Taking<Bucket>[], points: number) {
    const outcomes = await Promise.allSettled(applying.map(({ bucket, key }) => inBucket(bucket, (limiter) => limiter.consume(key, points))));
    const refusedAt = outcomes.findIndex((outcome) => outcome.status === 'rejected');
    if (refusedAt < 0) return;
    const taken = applying.filter((_, index) => outcomes[index]!.status === 'fulfilled');
    await Promise.all(taken.map(({ bucket, key }) => inBucket(bucket, (limiter) => limiter.reward(key, points))));
    const reason = (outcomes[refusedAt] as PromiseRejectedResult).reason;
    if (!(reason instanceof RateLimiterRes)) throw reason;
    throw rateLimited(reason.msBeforeNext, `rate limit ${applying[refusedAt]!.name} reached`);
  }

  const giveBack = (names: readonly ExactBucketName[], requester: Requester) => eachBucket(names, requester, (limiter, key) => limiter.reward(key, 1));

  /**
   * Runs `check` holding a token of each bucket, so parallel attempts cannot overrun them; a
   * failure (as `failed` says) keeps the tokens, anything else gives them back. An empty bucket
   * refuses (4290) before `check`, whatever its answer, and leaves no count behind.
   */
  async function underFailureLimits<T>(
    names: readonly ExactBucketName[],
    requester: Requester,
    detail: string,
    check: () => Promise<T>,
    failed: (error: unknown) => boolean,
  ): Promise<T> {
    const held: ExactBucketName[] = [];
    try {
      // The refusing bucket counted the attempt too, so it is held (and given back) like the others.
      await eachBucket(names, requester, async (limiter, key, name) => {
        held.push(name);
        await limiter.consume(key, 1);
      });
    } catch (outcome) {
      await giveBack(held, requester);
      if (!(outcome instanceof RateLimiterRes)) throw outcome;
      throw rateLimited(outcome.msBeforeNext, detail);
    }
    try {
      const result = await check();
      await giveBack(names, requester);
      return result;
    } catch (error) {
      if (!failed(error)) await giveBack(names, requester);
      throw error;
    }
  }

  /**
   * A login under the failure buckets (docs/decisions/limits-and-storage.md "Login: only wrong passwords
   * count"): only a
   * wrong password (4010) counts, and a success also clears the account's two buckets.
   */
  async function underLoginLimits<T>(requester: Requester, check: () => Promise<T>): Promise<T> {
    const wrongPassword = (error: unknown) => error instanceof AppError && error.errorName === 'unauthenticated';
    const result = await underFailureLimits(loginFailureBuckets, requester, 'too many failed logins', check, wrongPassword);
    await eachBucket(['loginFailuresPerAccountAndAddress', 'loginFailuresPerAccount'], requester, (limiter, key) => limiter.delete(key));
    return result;
  }

  /** Takes a token for a failed authentication; how long the address is then blocked, or null if it is not. */
  async function chargeAuthenticationFailure(address: string): Promise<number | null> {
    let blockedForMs: number | null = null;
    try {
      await eachBucket(['authenticationFailuresPerAddress'], { address, principal: null }, async (limiter, key) => {
        const result = await limiter.consume(key, 1);
        if (result.remainingPoints === 0) blockedForMs = result.msBeforeNext;
      });
    } catch (outcome) {
      if (!(outcome instanceof RateLimiterRes)) throw outcome;
      blockedForMs = outcome.msBeforeNext;
    }
    return blockedForMs;
  }

  return {
    consume,
    /** Reconciles every reconciled bucket with Redis now: sends what it took, hears the others (tests; see reconciled-buckets.ts). */
    reconcile: reconciler.reconcileAll,
    underFailureLimits,
    underLoginLimits,
    authenticationFailures: createFailureGate(chargeAuthenticationFailure),
    // Streams (SSE, and WebSocket subscriptions) end at their JWT's exp; a socket instead re-checks
    // its credentials on every message and heartbeat and closes with 1008, which its client understands.
    sseStreams: createConnectionCap('streams', limits.sseStreamsPerCredentialMax, limits.sseStreamsPerApiKeyMax, limits.sseStreamsPerInstanceMax, true),
    webSockets: createConnectionCap('WebSocket connections', limits.webSocketsPerCredentialMax, limits.webSocketsPerApiKeyMax, limits.webSocketsPerInstanceMax),
  };
}

/**
 * Authentication failures by address, without a round trip on the hot path: a failure takes a
 * token from the shared bucket, and once it takes the last one this instance remembers the
 * address as blocked until the bucket's window ends. Blocked, a request presenting credentials is refused
 * before they are looked up. Each instance learns of the block at its own next failure, so across
 * N instances an address gets at most N failures more than the bucket.
 */
function createFailureGate(charge: (address: string) => Promise<number | null>) {
  const blockedUntil = new TtlCache<number>(24 * 60 * 60 * 1000, limits.credentialCacheEntriesMax);
  return {
    refuseIfBlocked(address: string) {
      const until = blockedUntil.get(addressKeyOf(address));
      if (until !== undefined && until > Date.now()) throw rateLimited(until - Date.now(), 'too many failed authentications from this address');
    },
    async recordFailure(address: string) {
      const blockedForMs = await charge(address);
      if (blockedForMs !== null) blockedUntil.set(addressKeyOf(address), Date.now() + blockedForMs);
    },
  };
}

export type Admission = ReturnType<typeof createAdmission>;

/**
 * Counts what is open right now on this instance, per credential, per API key (all its users
 * together) and in total. `open` returns the release function, to call exactly once when the
 * stream or connection ends. `end`, when given, ends the stream or connection: `endApiKey` calls
 * it for everything opened with an API key that was just revoked.
 */
/** setTimeout's largest delay (about 24.8 days); longer waits are armed again. */
const timerDelayMsMax = 2 ** 31 - 1;

export function createConnectionCap(what: string, perCredentialMax: number, perApiKeyMax: number, perInstanceMax: number, endsWithCredential = false) {
  const openByCredential = new Map<string, number>();
  const openByApiKey = new Map<string, number>();
  const endsByApiKey = new Map<string, Set<() => void>>();
  let openTotal = 0;
  const refuse = (detail: string) => rateLimited(limits.connectionCapRetryAfterSeconds * 1000, detail);
  const add = (counts: Map<string, number>, key: string | null, change: number) => {
    if (key === null) return;
    const count = (counts.get(key) ?? 0) + change;
    if (count === 0) counts.delete(key);
    else counts.set(key, count);
  };

  /**
   * A stream lasts no longer than its credential: one opened with a JWT ends at the token's exp,
   * as a WebSocket's periodic check ends its socket. A timer longer than setTimeout allows is armed
   * again when it fires early.
   */
  function endAtExpiry(expiresAtMs: number | undefined, end: (() => void) | undefined): (() => void) | null {
    if (expiresAtMs === undefined || !end) return null;
    let timer: NodeJS.Timeout;
    const arm = () => {
      const leftMs = expiresAtMs - Date.now();
      if (leftMs <= 0) return end();
      timer = setTimeout(arm, Math.min(leftMs, timerDelayMsMax));
      timer.unref();
    };
    arm();
    return () => clearTimeout(timer);
  }

  function open(principal: Principal, end?: () => void): () => void {
    const credential = credentialOf(principal);
    const apiKey = principal.api_key_id;
    if (openTotal >= perInstanceMax) throw refuse(`this instance has ${perInstanceMax} ${what} open`);
    if ((openByCredential.get(credential) ?? 0) >= perCredentialMax) throw refuse(`at most ${perCredentialMax} ${what} open per credential`);
    if (apiKey && (openByApiKey.get(apiKey) ?? 0) >= perApiKeyMax) throw refuse(`at most ${perApiKeyMax} ${what} open per API key`);
    add(openByCredential, credential, 1);
    add(openByApiKey, apiKey, 1);
    openTotal += 1;
    const ends = apiKey && end ? (endsByApiKey.get(apiKey) ?? endsByApiKey.set(apiKey, new Set()).get(apiKey)!) : null;
    ends?.add(end!);
    let released = false;
    const stopExpiry = endsWithCredential ? endAtExpiry(principal.expires_at_ms, end) : null;
    return () => {
      if (released) return;
      released = true;
      stopExpiry?.();
      openTotal -= 1;
      add(openByCredential, credential, -1);
      add(openByApiKey, apiKey, -1);
      ends?.delete(end!);
      if (ends?.size === 0 && endsByApiKey.get(apiKey!) === ends) endsByApiKey.delete(apiKey!);
    };
  }

  /** Ends everything this instance has open with the API key (it was revoked). */
  function endApiKey(apiKeyId: string) {
    for (const end of [...(endsByApiKey.get(apiKeyId) ?? [])]) end();
  }

  // openApiKeyIds: the API keys with something open here, which a revocation would end.
  return {
    open,
    endApiKey,
    openApiKeyIds: () => [...endsByApiKey.keys()],
    get openTotal() {
      return openTotal;
    },
  };
}
