import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { type RateLimitName, type RateLimitSetting, rateLimitNames } from '../config.ts';
import { AppError } from '../errors.ts';
import { limits } from '../limits.ts';
import type { EngineDependencies, Principal } from './dependencies.ts';

/**
 * Admission: whether a request, a stream or a connection may start at all (decisions section 6,
 * docs/decisions.md "Rate limits and stream caps"). Rate limits count in Redis, shared by every
 * instance, or in process on the embedded default; open streams and sockets are counted per
 * instance, where their memory is. A refusal is 4290 with `retry_after_seconds`.
 */
export type { RateLimitName };

/** What a bucket is keyed by. An anonymous request's credential is its address. */
export const rateLimitKeys: Record<RateLimitName, 'address' | 'credential' | 'account'> = {
  requestsPerAddress: 'address',
  signupPerAddress: 'address',
  loginPerAddress: 'address',
  loginPerAccount: 'account',
  readsPerCredential: 'credential',
  writesPerCredential: 'credential',
  rpcCallsPerCredential: 'credential',
  streamOpensPerCredential: 'credential',
};

/** Who is asking, as far as the buckets care. */
export interface Requester {
  address: string;
  principal: Principal | null;
  /** The email a login names, for the per-account bucket. */
  account?: string;
}

/** The idempotency scope's notion of a credential: the API key and the user it acts for, or the human. */
export const credentialOf = (principal: Principal) =>
  principal.api_key_id ? `key:${principal.api_key_id}:${principal.user_id}` : `user:${principal.user_id}`;

function keyFor(name: RateLimitName, requester: Requester): string {
  const kind = rateLimitKeys[name];
  if (kind === 'account' && requester.account !== undefined) return `account:${requester.account.toLowerCase()}`;
  if (kind === 'credential' && requester.principal) return credentialOf(requester.principal);
  return `address:${requester.address}`;
}

export const rateLimited = (retryAfterMs: number, detail: string) =>
  new AppError('rate_limited', detail, { retry_after_seconds: Math.max(1, Math.ceil(retryAfterMs / 1000)), detail });

/** Redis failures are logged at most this often, so an outage is one line a minute, not one per request. */
const outageLogIntervalMs = 60_000;

interface Bucket {
  shared: RateLimiterAbstract | null;
  local: RateLimiterMemory;
}

function createBucket(name: RateLimitName, setting: RateLimitSetting, shared: EngineDependencies['bus']['shared']): Bucket {
  const options = { points: setting.requests, duration: setting.windowSeconds, keyPrefix: `${shared?.keyPrefix ?? ''}rate:${name}` };
  return {
    // Not ready (reconnecting) means refused at once and counted locally, instead of queueing.
    shared: shared ? new RateLimiterRedis({ ...options, storeClient: shared.redis, rejectIfRedisNotReady: true }) : null,
    local: new RateLimiterMemory(options),
  };
}

export function createAdmission({ bus, config, log }: EngineDependencies) {
  const buckets = new Map<RateLimitName, Bucket>();
  for (const name of rateLimitNames) {
    const setting = config.rateLimits[name];
    if (setting) buckets.set(name, createBucket(name, setting, bus.shared));
  }
  let lastOutageLogAt = 0;

  /**
   * With Redis unreachable, each instance keeps counting in its own memory: the limits still hold
   * per instance (so up to N times looser across N instances), and no request fails because of it.
   */
  async function consumeIn(bucket: Bucket, key: string, points: number): Promise<RateLimiterRes> {
    if (!bucket.shared) return bucket.local.consume(key, points);
    try {
      return await bucket.shared.consume(key, points);
    } catch (outcome) {
      if (outcome instanceof RateLimiterRes) throw outcome;
      if (Date.now() - lastOutageLogAt > outageLogIntervalMs) {
        lastOutageLogAt = Date.now();
        log.warn('rate limits are counted per instance: Redis does not answer', { error: outcome });
      }
      return bucket.local.consume(key, points);
    }
  }

  /** Takes `points` from each named bucket in turn; the first that is empty refuses with 4290. */
  async function consume(names: readonly RateLimitName[], requester: Requester, points = 1): Promise<void> {
    for (const name of names) {
      const bucket = buckets.get(name);
      if (!bucket) continue;
      try {
        await consumeIn(bucket, keyFor(name, requester), points);
      } catch (outcome) {
        if (!(outcome instanceof RateLimiterRes)) throw outcome;
        throw rateLimited(outcome.msBeforeNext, `rate limit ${name} reached`);
      }
    }
  }

  return {
    consume,
    sseStreams: createConnectionCap('SSE streams', limits.sseStreamsPerCredentialMax, limits.sseStreamsPerInstanceMax),
    webSockets: createConnectionCap('WebSocket connections', limits.webSocketsPerCredentialMax, limits.webSocketsPerInstanceMax),
  };
}

export type Admission = ReturnType<typeof createAdmission>;

/**
 * Counts what is open right now on this instance, per credential and in total. `open` returns the
 * release function, to call exactly once when the stream or connection ends.
 */
export function createConnectionCap(what: string, perCredentialMax: number, perInstanceMax: number) {
  const openByCredential = new Map<string, number>();
  let openTotal = 0;
  const refuse = (detail: string) => rateLimited(limits.connectionCapRetryAfterSeconds * 1000, detail);

  function open(principal: Principal): () => void {
    const credential = credentialOf(principal);
    const mine = openByCredential.get(credential) ?? 0;
    if (openTotal >= perInstanceMax) throw refuse(`this instance has ${perInstanceMax} ${what} open`);
    if (mine >= perCredentialMax) throw refuse(`at most ${perCredentialMax} ${what} open per credential`);
    openByCredential.set(credential, mine + 1);
    openTotal += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      openTotal -= 1;
      const left = (openByCredential.get(credential) ?? 1) - 1;
      if (left === 0) openByCredential.delete(credential);
      else openByCredential.set(credential, left);
    };
  }

  return { open, get openTotal() { return openTotal; } };
}
