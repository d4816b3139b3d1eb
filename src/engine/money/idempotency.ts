import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { isStalePreparedStatement, prepared } from '../../db/prepared.ts';
import { type Prefetched, type StatementClaim, withSingleStatement, withTransaction, type UnitOfWork } from '../../db/transaction.ts';
import { AppError } from '../../errors.ts';
import { limits } from '../../limits.ts';
import { completeClaim } from '../../store/claims.ts';
import type { EngineDependencies, Principal } from '../common/index.ts';

/**
 * Idempotency (decisions section 5). A key is claimed in its own short database transaction, so a
 * concurrent duplicate sees it at once (4091) instead of waiting. The effect and the stored
 * response then commit together in one database transaction: a key can never produce two
 * effects, nor an effect without its stored response. A request that fails releases its claim,
 * so the caller may retry the same key after fixing the cause (for example topping up).
 *
 * The working database transaction holds an advisory lock named after the key. A retry may take
 * over an old claim only when that lock is free, that is when the original request's database
 * transaction is gone (its process died); a request that is merely slow keeps its claim. The
 * claim token makes the completion fail if the claim was taken over regardless.
 *
 * A fresh claim skips the claim's own statement: single-statement work that can decide on this
 * instance's cached read (a repeat purchase) inserts its key, completed with the response, in its
 * write statement, which writes only if the key was not there and the read still holds. A
 * duplicate on this instance is 4091 at once (the keys in flight here); on another instance its
 * statement finds the key and goes the regular way, which replays the stored response (or says
 * 4091 while a regular claim is in flight). Exactly one effect per key either way: the key's
 * primary key decides.
 */
export interface IdempotencyRequest {
  key: string;
  /** Method and path: the same key on another endpoint is another key. */
  operation: string;
  /** Hash of the request's meaningful content; a different one under the same key is 4220. */
  fingerprint: string;
}

/** A one-row SELECT (text with `?` placeholders) that may run in the claim's statement. */
export interface ClaimRead {
  text: string;
  bindings: unknown[];
  /**
   * The same read as this instance last made it, which the work may decide on if its write
   * statement checks it (store/change-purchases.ts): then the key is claimed by that statement
   * too, a fresh claim, and the request makes one round trip. `forget` drops it once it proved stale.
   */
  cached?: { row: Record<string, unknown>; forget(): void };
}

export interface Outcome<T> {
  data: T;
  status: number;
  replayed: boolean;
}

/** The claim runs outside any unit of work, so it retries a statement a migration outdated itself. */
async function retriedOnceIfStale<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!isStalePreparedStatement(error)) throw error;
    return attempt();
  }
}

/** Stable under member order: `{a, b}` and `{b, a}` are the same request. */
function canonical(value: unknown): unknown {
  // JSON has no bigint (an amount such as a purchase's max_price): its decimal text stands for it.
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

export const fingerprintOf = (value: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(canonical(value ?? null)))
    .digest('hex');

/** The advisory lock id of a key: 60 bits of its scope hash, within PostgreSQL's bigint. */
const lockIdOf = (scopeHash: string) => BigInt(`0x${scopeHash.slice(0, 15)}`).toString();

export function createIdempotency({ db, asyncCommitDb, now }: EngineDependencies) {
  /**
   * The keys this instance is working on, with when each request began. A duplicate arriving
   * meanwhile is 4091 at once, without a statement, and a statement never carries two fresh claims
   * of one key. A request at work longer than a claim may be taken over after blocks nobody here:
   * its retry goes to the database, whose claim decides as for a request that died. Across
   * instances the database decides (the key's primary key).
   */
  const inFlightHere = new Map<string, { since: number; fingerprint: string }>();

  const scopeHash = (principal: Principal | null, request: IdempotencyRequest) => {
    const credential = principal ? `${principal.caller_type}:${principal.api_key_id ?? '-'}:${principal.user_id}` : 'admin';
    return createHash('sha256').update(`${credential}\n${request.operation}\n${request.key}`).digest('hex');
  };

  /**
   * Returns the claim token when the caller may run the work, or the stored outcome to replay.
   * A one-row `read` the work needs first runs in the claim's own statement (its result goes to
   * the work as `unit.prefetched`), which saves the work a round trip.
   */
  async function claim(
    hash: string,
    request: IdempotencyRequest,
    read?: ClaimRead,
  ): Promise<{ token: string; prefetched?: Prefetched } | { replay: Outcome<unknown> }> {
    const at = now();
    const token = randomUUID();
    // The claim need not wait for the disk: the effect's own durable commit flushes the claim's
    // earlier WAL with it, and a claim a crash loses belongs to a request that wrote nothing.
    const [result] = await retriedOnceIfStale(() =>
      prepared<Record<string, unknown> & { claimed: number }>(
        asyncCommitDb,
        `WITH claim AS (
         INSERT INTO idempotency_keys (scope_hash, fingerprint, state, claim_token, created_at, expires_at) VALUES (?, ?, 'in_flight', ?, ?, ?)
         ON CONFLICT (scope_hash) DO NOTHING RETURNING scope_hash
       )
       SELECT (SELECT count(*) FROM claim)::int AS claimed${read ? ', piggyback.*' : ''}
         FROM (SELECT 1) AS one${read ? ` LEFT JOIN (${read.text}) AS piggyback ON true` : ''}`,
        [hash, request.fingerprint, token, at, new Date(at.getTime() + limits.idempotencyRetentionMs), ...(read?.bindings ?? [])],
      ),
    );
    const { claimed, ...row } = result!;
    if (claimed > 0) return { token, ...(read ? { prefetched: { row: Object.values(row).every((value) => value === null) ? null : row } } : {}) };
    const existing = await db('idempotency_keys').where({ scope_hash: hash }).first();
    if (!existing || new Date(existing.expires_at) <= at) {
      await db('idempotency_keys').where({ scope_hash: hash }).where('expires_at', '<=', at).del();
      return claim(hash, request, read);
    }
    if (existing.fingerprint !== request.fingerprint) throw new AppError('idempotency_key_reused', 'this Idempotency-Key was used with a different request');
    if (existing.state === 'completed') return { replay: { data: existing.response_body, status: existing.response_status, replayed: true } };
    if (new Date(existing.created_at).getTime() <= at.getTime() - limits.idempotencyClaimTakeoverAfterMs && (await takeOver(hash, token, at))) return { token };
    throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }

  async function takeOver(hash: string, token: string, at: Date): Promise<boolean> {
    return db.transaction(async (trx) => {
      const free = await trx.raw('SELECT pg_try_advisory_xact_lock(?::bigint) AS free', [lockIdOf(hash)]);
      if (!free.rows[0].free) return false;
      const updated = await trx('idempotency_keys').where({ scope_hash: hash, state: 'in_flight' }).update({ claim_token: token, created_at: at });
      return updated === 1;
    });
  }

  async function complete(trx: Knex, hash: string, token: string, status: number, result: unknown) {
    const held = await completeClaim(trx, { scopeHash: hash, token, lockId: lockIdOf(hash), responseStatus: status, responseBody: result });
    // Someone else owns the claim now: roll this effect back rather than produce a second one.
    if (!held) throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
  }

  /**
   * Runs `work` at most once per key. Without a key it runs it in a database transaction, or,
   * when `writes` says the work writes with one statement, without BEGIN and COMMIT.
   */
  async function run<T>(
    principal: Principal | null,
    request: IdempotencyRequest | null,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    writes: 'one statement' | 'several statements' = 'several statements',
    read?: ClaimRead,
  ): Promise<Outcome<T>> {
    if (!request) return { data: await (writes === 'one statement' ? withSingleStatement : withTransaction)(db, work), status, replayed: false };
    const hash = scopeHash(principal, request);
    const here = { since: now().getTime(), fingerprint: request.fingerprint };
    const earlier = inFlightHere.get(hash);
    if (earlier && earlier.since > here.since - limits.idempotencyClaimTakeoverAfterMs) {
      // As the claim answers: another request under the key is 4220 before it is 4091.
      if (earlier.fingerprint !== here.fingerprint) throw new AppError('idempotency_key_reused', 'this Idempotency-Key was used with a different request');
      throw new AppError('idempotency_in_progress', 'a request with this Idempotency-Key is still being processed');
    }
    inFlightHere.set(hash, here);
    try {
      if (writes === 'one statement' && read?.cached) {
        const fresh = await runFreshClaim(hash, request, status, work, read.cached);
        if (fresh) return fresh;
      }
      return await runClaimed(hash, request, status, work, writes, read);
    } finally {
      // Not a later request's entry, which a takeover may have put in this one's place.
      if (inFlightHere.get(hash) === here) inFlightHere.delete(hash);
    }
  }

  /**
   * Single-statement work decided on a cached read, its key claimed by its own write statement.
   * Undefined when that statement wrote nothing (the key exists, the read is stale) or the work
   * refused on the cached row: the regular claim then decides on a row just read, and replays
   * whatever the key holds by then (a failed attempt committed nothing: its one statement is atomic).
   */
  async function runFreshClaim<T>(
    hash: string,
    request: IdempotencyRequest,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    cached: NonNullable<ClaimRead['cached']>,
  ): Promise<Outcome<T> | undefined> {
    const at = now();
    const fresh = { fingerprint: request.fingerprint, createdAt: at, expiresAt: new Date(at.getTime() + limits.idempotencyRetentionMs) };
    const claim: StatementClaim = { scopeHash: hash, token: randomUUID(), lockId: lockIdOf(hash), responseStatus: status, completed: false, fresh };
    let data: T;
    try {
      data = await withSingleStatement(db, work, { claim, prefetched: { row: cached.row, cached: true } });
    } catch {
      // Decided again by the caller, on a row just read: a refusal is never decided on a cached row.
      cached.forget();
      return undefined;
    }
    if (!claim.completed) throw new Error('single-statement work returned without completing its fresh idempotency claim');
    return { data, status, replayed: false };
  }

  async function runClaimed<T>(
    hash: string,
    request: IdempotencyRequest,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    writes: 'one statement' | 'several statements',
    read?: ClaimRead,
  ): Promise<Outcome<T>> {
    const claimed = await claim(hash, request, writes === 'one statement' ? read : undefined);
    if ('replay' in claimed) return claimed.replay as Outcome<T>;
    try {
      if (writes === 'one statement')
        return { data: await runClaimedStatement(hash, claimed.token, status, work, claimed.prefetched), status, replayed: false };
      const data = await withTransaction(db, async (unit) => {
        await prepared(unit.trx, 'SELECT pg_advisory_xact_lock(?::bigint)', [lockIdOf(hash)]);
        const result = await work(unit);
        await complete(unit.trx, hash, claimed.token, status, result);
        return result;
      });
      return { data, status, replayed: false };
    } catch (error) {
      await db('idempotency_keys').where({ scope_hash: hash, state: 'in_flight', claim_token: claimed.token }).del();
      throw error;
    }
  }

  /**
   * Single-statement work completes the claim inside its own write statement (the effect and the
   * stored response still commit together), which saves BEGIN, the lock, the completion and
   * COMMIT: four round trips.
   */
  async function runClaimedStatement<T>(
    hash: string,
    token: string,
    status: number,
    work: (unit: UnitOfWork) => Promise<T>,
    prefetched?: Prefetched,
  ): Promise<T> {
    const claim: StatementClaim = { scopeHash: hash, token, lockId: lockIdOf(hash), responseStatus: status, completed: false };
    const data = await withSingleStatement(db, work, { claim, prefetched });
    if (!claim.completed) throw new Error('single-statement work returned without completing its idempotency claim');
    return data;
  }

  return { run };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
